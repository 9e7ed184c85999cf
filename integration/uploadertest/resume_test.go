package uploadertest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/fakes/faultproxy"

	"github.com/objup/objup/uploader"
)

// abandoned starts an upload of data through a Writer of a client of its
// own, which reaches e's fake through a proxy, waits until the service
// persisted at least least bytes of it, and returns the Writer's handle
// then. The proxy then closes, as a killed process's connections do, so
// the Writer's cancel of the session never reaches the service: the
// session stays for a later Writer.
func abandoned(t *testing.T, e *env, name string, data []byte, least int64, opts ...uploader.WriterOption) uploader.Handle {
	t.Helper()
	p, c := proxiedClient(t, e)
	defer p.Close()
	defer c.Close()
	w, err := c.NewWriter(context.Background(), bucket, name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := w.Handle(); ok {
		t.Fatal("a Writer that sent nothing has a handle")
	}
	if _, err := w.Write(data[:len(data)/2]); err != nil {
		t.Fatal(err)
	}
	var h uploader.Handle
	deadline := time.Now().Add(20 * time.Second)
	for {
		var ok bool
		h, ok = w.Handle()
		if ok && h.Persisted >= least {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no handle with %d bytes persisted: %+v %v", least, h, ok)
		}
		time.Sleep(5 * time.Millisecond)
	}
	p.Close()
	_ = w.CloseWithError(errors.New("killed"))
	// The fake logs a call when it ends, which it learns after the
	// proxy closed: wait for the killed stream's record, so that a test
	// counting the calls that follow does not count it.
	for !killedStreamLogged(e, name) {
		if time.Now().After(deadline) {
			t.Fatalf("the fake never logged the end of the killed stream of %s", name)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return h
}

// killedStreamLogged reports whether the fake's log holds a write stream
// of object name that ended in failure: the stream a killed process left.
func killedStreamLogged(e *env, name string) bool {
	for _, c := range e.srv.Calls() {
		if c.Object == name && c.Code != codes.OK && (c.Method == fakes.MethodBidiWriteObject || c.Method == fakes.MethodWriteObject) {
			return true
		}
	}
	return false
}

// proxiedClient returns a client of its own that reaches e's fake through
// a proxy, which closes as a killed process's connections do.
func proxiedClient(t *testing.T, e *env) (*faultproxy.Proxy, *uploader.Client) {
	t.Helper()
	p, err := faultproxy.New(e.srv.GRPCAddr())
	if err != nil {
		t.Fatal(err)
	}
	c, err := uploader.NewClient(context.Background(),
		option.WithEndpoint(p.Addr()), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
		retryWith(uploader.Retry{Deadline: time.Second}))
	if err != nil {
		p.Close()
		t.Fatal(err)
	}
	return p, c
}

func crcOf(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// TestResumeSession: a session an abandoned Writer began goes on from
// what the service persisted, from a Handle that went through JSON, and
// the object is stored once, exact.
func TestResumeSession(t *testing.T) {
	e := newEnv(t)
	data := payload(5*mib+123, 1)
	h := abandoned(t, e, "big", data, 1*mib)
	if h.Kind != uploader.KindResumable || h.Session == "" || h.API != "grpc" || h.Persisted%(256*kib) != 0 {
		t.Fatalf("handle %+v", h)
	}
	if h.CRC32C != crcOf(data[:h.Persisted]) {
		t.Fatalf("handle CRC32C %08x, the first %d bytes have %08x", h.CRC32C, h.Persisted, crcOf(data[:h.Persisted]))
	}
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var back uploader.Handle
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	starts := e.countCalls("StartResumableWrite")
	var first int64 = -1
	attrs, err := e.c.Resume(context.Background(), back, bytes.NewReader(data), uploader.WithProgress(func(n int64) {
		if first < 0 {
			first = n
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	sameBytes(t, "resumed object", e.content("big"), data)
	if attrs.Size != int64(len(data)) || attrs.CRC32C != crcOf(data) {
		t.Fatalf("attrs %d bytes %08x", attrs.Size, attrs.CRC32C)
	}
	if n := e.countCalls("StartResumableWrite"); n != starts {
		t.Fatalf("%d new sessions, want none", n-starts)
	}
	if first < h.Persisted {
		t.Fatalf("the resumed Writer's first progress is %d, below the %d persisted", first, h.Persisted)
	}
	// The session is finished: a second Resume returns the object, and
	// stores nothing new.
	again, err := e.c.Resume(context.Background(), back, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if again.Generation != attrs.Generation {
		t.Fatalf("second resume: generation %d, want %d", again.Generation, attrs.Generation)
	}
}

// TestResumeRefusesChangedSource: a source whose first bytes differ from
// what the service holds is refused before a byte is sent, and the session
// is left as it was; the right source then finishes it.
func TestResumeRefusesChangedSource(t *testing.T) {
	e := newEnv(t)
	data := payload(6*mib, 2)
	h := abandoned(t, e, "obj", data, 512*kib)
	for _, tc := range []struct {
		name string
		src  []byte
	}{
		{"first byte", append([]byte{data[0] ^ 1}, data[1:]...)},
		{"shorter than persisted", data[:h.Persisted-1]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(e.srv.Calls())
			_, err := e.c.Resume(context.Background(), h, bytes.NewReader(tc.src))
			if !uploader.IsSourceChanged(err) || uploader.CodeOf(err) != codes.FailedPrecondition {
				t.Fatalf("Resume of a changed source: %v", err)
			}
			if calls := e.srv.Calls()[before:]; len(calls) != 0 {
				t.Fatalf("calls after a refused resume: %+v", calls)
			}
		})
	}
	e.absent("obj")
	if _, err := e.c.Resume(context.Background(), h, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	sameBytes(t, "obj", e.content("obj"), data)
}

// TestResumeFinishedSession: the handle of an upload that finished
// returns its object for the same source, and an IsSourceChanged error for
// another whose prefix matches.
func TestResumeFinishedSession(t *testing.T) {
	e := newEnv(t)
	data := payload(2*mib, 3)
	w, err := e.c.NewWriter(context.Background(), bucket, "done", uploader.WithChunkSize(256*kib))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	h, ok := w.Handle()
	if !ok {
		t.Fatal("no handle after 2 MiB")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.Handle(); ok {
		t.Fatal("a handle after a successful Close")
	}
	attrs, err := e.c.Resume(context.Background(), h, bytes.NewReader(data))
	if err != nil || attrs.Generation != w.Attrs().Generation {
		t.Fatalf("Resume of a finished upload: %v, %+v", err, attrs)
	}
	other := append(append([]byte(nil), data...), 'x')
	if _, err := e.c.Resume(context.Background(), h, bytes.NewReader(other)); !uploader.IsSourceChanged(err) {
		t.Fatalf("Resume of a finished upload with a longer source: %v", err)
	}
}

// TestResumeGoneSession: a cancelled session is a NotFound error that
// matches fs.ErrNotExist, and stores nothing.
func TestResumeGoneSession(t *testing.T) {
	e := newEnv(t)
	data := payload(2*mib, 4)
	w, err := e.c.NewWriter(context.Background(), bucket, "gone")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	h, ok := w.Handle()
	if !ok {
		t.Fatal("no handle")
	}
	_ = w.CloseWithError(errors.New("abandon")) // cancels the session
	_, err = e.c.Resume(context.Background(), h, bytes.NewReader(data))
	if !errors.Is(err, fs.ErrNotExist) || uploader.CodeOf(err) != codes.NotFound {
		t.Fatalf("Resume of a cancelled session: %v", err)
	}
	e.absent("gone")
}

// TestResumeBadInput: handles and options a resume cannot take are
// InvalidArgument errors before any call.
func TestResumeBadInput(t *testing.T) {
	e := newEnv(t)
	good := uploader.Handle{Version: 1, Kind: uploader.KindResumable, API: "grpc", Bucket: bucket, Object: "o", Session: "s"}
	mod := func(f func(h *uploader.Handle)) uploader.Handle { h := good; f(&h); return h }
	src := bytes.NewReader(nil)
	for _, tc := range []struct {
		name string
		h    uploader.Handle
		src  *bytes.Reader
		opts []uploader.WriterOption
	}{
		{"version", mod(func(h *uploader.Handle) { h.Version = 2 }), src, nil},
		{"kind", mod(func(h *uploader.Handle) { h.Kind = "other" }), src, nil},
		{"api", mod(func(h *uploader.Handle) { h.API = "json" }), src, nil},
		{"no session", mod(func(h *uploader.Handle) { h.Session = "" }), src, nil},
		{"bucket", mod(func(h *uploader.Handle) { h.Bucket = "Bad_Bucket!" }), src, nil},
		{"object", mod(func(h *uploader.Handle) { h.Object = "" }), src, nil},
		{"negative persisted", mod(func(h *uploader.Handle) { h.Persisted = -1 }), src, nil},
		{"appendable without generation", mod(func(h *uploader.Handle) { h.Kind = uploader.KindAppendable }), src, nil},
		{"parallel without id", mod(func(h *uploader.Handle) { h.Kind = uploader.KindParallel }), src, nil},
		{"nil source", good, nil, nil},
		{"attributes", good, src, []uploader.WriterOption{uploader.WithAttrs(uploader.ObjectAttrs{ContentType: "text/plain"})}},
		{"conditions", good, src, []uploader.WriterOption{uploader.WithConditions(uploader.Conditions{DoesNotExist: true})}},
		{"send CRC32C", good, src, []uploader.WriterOption{uploader.WithSendCRC32C(1)}},
		{"nil journal", good, src, []uploader.WriterOption{uploader.WithJournal(nil)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(e.srv.Calls())
			var err error
			if tc.src == nil {
				_, err = e.c.Resume(context.Background(), tc.h, nil, tc.opts...)
			} else {
				_, err = e.c.Resume(context.Background(), tc.h, tc.src, tc.opts...)
			}
			if !isInvalid(err) {
				t.Fatalf("got %v, want InvalidArgument", err)
			}
			if n := len(e.srv.Calls()) - before; n != 0 {
				t.Fatalf("%d calls", n)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.c.Resume(ctx, good, src); uploader.CodeOf(err) != codes.Canceled {
		t.Fatalf("cancelled context: %v", err)
	}
}

// TestJournalKeepsTheHandle: WithJournal writes the handle while the
// upload runs and removes it once it ended; a small object writes none.
func TestJournalKeepsTheHandle(t *testing.T) {
	e := newEnv(t)
	j, err := uploader.OpenJournal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Upload(context.Background(), bucket, "small", bytes.NewReader(payload(10*kib, 5)), uploader.WithJournal(j)); err != nil {
		t.Fatal(err)
	}
	if hs, err := j.Handles(); err != nil || len(hs) != 0 {
		t.Fatalf("journal after a small upload: %v %v", hs, err)
	}
	data := payload(3*mib, 6)
	w, err := e.c.NewWriter(context.Background(), bucket, "large", uploader.WithJournal(j))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data[:2*mib]); err != nil {
		t.Fatal(err)
	}
	h, ok, err := j.Lookup(bucket, "large")
	if err != nil || !ok || h.Session == "" || h.Kind != uploader.KindResumable {
		t.Fatalf("journal during the upload: %+v %v %v", h, ok, err)
	}
	if _, err := w.Write(data[2*mib:]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := j.Lookup(bucket, "large"); ok {
		t.Fatal("the journal keeps a finished upload")
	}
	// A failed upload's entry goes too: its session was cancelled.
	w, err = e.c.NewWriter(context.Background(), bucket, "failed", uploader.WithJournal(j))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	_ = w.CloseWithError(errors.New("stop"))
	if hs, _ := j.Handles(); len(hs) != 0 {
		t.Fatalf("journal after a failed upload: %+v", hs)
	}
}

// TestDiscard: Discard cancels a session, which then stores nothing, and
// deletes a parallel upload's temporary objects.
func TestDiscard(t *testing.T) {
	e := newEnv(t)
	data := payload(6*mib, 7)
	h := abandoned(t, e, "discarded", data, 512*kib)
	if err := e.c.Discard(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Resume(context.Background(), h, bytes.NewReader(data)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Resume after Discard: %v", err)
	}
	e.absent("discarded")
	// Discarding again is fine: the session is gone.
	if err := e.c.Discard(context.Background(), h); err != nil {
		t.Fatalf("second Discard: %v", err)
	}

	// A parallel upload's parts, as a killed process leaves them.
	ph := abandonedParallel(t, e, "parallel", payload(12*mib, 8))
	before := e.count()
	if err := e.c.Discard(context.Background(), ph); err != nil {
		t.Fatal(err)
	}
	e.noTemporaries()
	if n := e.count(); n >= before {
		t.Fatalf("%d objects before Discard, %d after", before, n)
	}
	e.absent("parallel")
	bad := ph
	bad.ID = ""
	if err := e.c.Discard(context.Background(), bad); !isInvalid(err) {
		t.Fatalf("Discard of a handle without id: %v", err)
	}
}

// abandonedParallel is abandoned for a parallel upload of 2 MiB parts: it
// returns the handle once the service stored a part.
func abandonedParallel(t *testing.T, e *env, name string, data []byte) uploader.Handle {
	t.Helper()
	p, c := proxiedClient(t, e)
	defer p.Close()
	defer c.Close()
	w, err := c.NewWriter(context.Background(), bucket, name, uploader.WithParallelUpload(uploader.ParallelUpload{PartSize: 2 * mib, Parts: 2}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data[:len(data)/2]); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		h, ok := w.Handle()
		if ok && h.Kind == uploader.KindParallel {
			for _, pt := range h.Parts {
				if pt.Generation != 0 {
					p.Close()
					_ = w.CloseWithError(errors.New("killed"))
					return h
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no part stored: %+v", h)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestAttrs: the live object's attributes; a missing one matches
// fs.ErrNotExist; bad names are refused before any call.
func TestAttrs(t *testing.T) {
	e := newEnv(t)
	data := payload(100*kib, 9)
	stored, err := e.c.Upload(context.Background(), bucket, "a", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	a, err := e.c.Attrs(context.Background(), bucket, "a")
	if err != nil || a.Generation != stored.Generation || a.Size != int64(len(data)) || a.CRC32C != crcOf(data) || !a.HasCRC32C {
		t.Fatalf("Attrs: %+v %v", a, err)
	}
	if _, err := e.c.Attrs(context.Background(), bucket, "missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Attrs of a missing object: %v", err)
	}
	before := len(e.srv.Calls())
	for _, tc := range []struct{ bucket, object string }{{"", "a"}, {bucket, ""}, {"UPPER", "a"}, {bucket, "bad\nname"}} {
		if _, err := e.c.Attrs(context.Background(), tc.bucket, tc.object); !isInvalid(err) {
			t.Errorf("Attrs(%q, %q): %v", tc.bucket, tc.object, err)
		}
	}
	if n := len(e.srv.Calls()) - before; n != 0 {
		t.Fatalf("%d calls for refused names", n)
	}
}

// TestResumeAppendable: the handle of an appendable object holds its
// generation and the CRC32C of what the service persisted at the last
// Flush; a Resume takes the object over, checks the source against the
// service's checksum, and finalizes it exact.
func TestResumeAppendable(t *testing.T) {
	e := newEnv(t)
	data := payload(3*mib+17, 10)
	w, err := e.c.NewWriter(context.Background(), bucket, "app", uploader.WithAppendable())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data[:mib]); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.Handle(); ok {
		t.Fatal("a handle before the first flush")
	}
	n, err := w.Flush(context.Background())
	if err != nil || n != mib {
		t.Fatalf("Flush: %d %v", n, err)
	}
	h, ok := w.Handle()
	if !ok || h.Kind != uploader.KindAppendable || h.Generation == 0 || h.Persisted != mib || h.CRC32C != crcOf(data[:mib]) {
		t.Fatalf("handle after a flush: %+v %v", h, ok)
	}
	// A changed source is refused before the takeover fences the Writer.
	bad := append([]byte(nil), data...)
	bad[10] ^= 1
	if _, err := e.c.Resume(context.Background(), h, bytes.NewReader(bad)); !uploader.IsSourceChanged(err) {
		t.Fatalf("Resume of a changed source: %v", err)
	}
	attrs, err := e.c.Resume(context.Background(), h, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if attrs.Generation != h.Generation || attrs.Finalized.IsZero() {
		t.Fatalf("resumed object: generation %d (want %d), finalized %v", attrs.Generation, h.Generation, attrs.Finalized)
	}
	sameBytes(t, "app", e.content("app"), data)
	// The first Writer was fenced: it fails, and stores nothing more.
	if _, err := w.Write(data[mib:]); err == nil {
		err = w.Close()
		if err == nil {
			t.Fatal("the fenced Writer closed without an error")
		}
	} else {
		_ = w.Close()
	}
	sameBytes(t, "app after the fenced Writer", e.content("app"), data)
}

// TestJournalHandlesSkipsDamagedEntries: an entry that cannot be read
// does not hide the others.
func TestJournalHandlesSkipsDamagedEntries(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	j, err := uploader.OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := e.c.NewWriter(context.Background(), bucket, "journaled", uploader.WithJournal(j))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(payload(3*mib, 12)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "0123456789abcdef0123456789abcdef.objup.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	hs, err := j.Handles()
	if err == nil || len(hs) != 1 || hs[0].Object != "journaled" {
		t.Fatalf("Handles with a damaged entry: %v, %+v", err, hs)
	}
	_ = w.CloseWithError(errors.New("done"))
}
