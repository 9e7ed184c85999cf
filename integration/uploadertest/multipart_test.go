package uploadertest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/fakes/faultproxy"
	"github.com/objup/objup/header"
	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader"
)

// XML API multipart calls, as the fake logs them.
const (
	mpInitiate = "xml.multipart.initiate"
	mpPart     = "xml.multipart.uploadPart"
	mpComplete = "xml.multipart.complete"
	mpAbort    = "xml.multipart.abort"
)

// mpClients are a gRPC client that takes the fake's XML endpoint and a
// JSON API client, both on e's fake.
func mpClients(t *testing.T, e *env) map[string]*uploader.Client {
	t.Helper()
	c, err := uploader.NewClient(context.Background(), append(dialOptions(e.srv), uploader.WithRetry(fastRetry), uploader.WithXMLEndpoint(e.srv.HTTPURL()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return map[string]*uploader.Client{"gRPC": c, "JSON": httpClient(t, e.srv.HTTPURL())}
}

// methods counts the calls of e's fake by method.
func methods(e *env) map[string]int {
	m := map[string]int{}
	for _, c := range e.srv.Calls() {
		m[c.Method]++
	}
	return m
}

// TestMultipartUpload: a parallel upload of the default method goes
// through the XML API's multipart upload over both clients: the object is
// exact, with its attributes and CRC32C, one object write, no temporary
// object, no upload left; parts that fail or lose their answer are sent
// again.
func TestMultipartUpload(t *testing.T) {
	e := newEnv(t)
	for tr, c := range mpClients(t, e) {
		for _, tc := range []struct {
			name   string
			size   int
			faults func()
		}{
			{"clean", 23*mib + 5, nil},
			{"one part", 3 * mib, nil},
			{"parts fail", 16 * mib, func() {
				e.srv.FailCall(mpPart, 2, codes.Unavailable)
				e.srv.FailCall(mpPart, 3, codes.Internal)
			}},
			{"answers lost", 16 * mib, func() {
				e.srv.LoseAnswer(mpPart)
				e.srv.LoseAnswer(mpComplete)
			}},
			{"initiate fails", 11 * mib, func() { e.srv.FailCall(mpInitiate, 1, codes.Unavailable) }},
		} {
			name := tr + "/" + tc.name
			e.srv.ResetCalls()
			if tc.faults != nil {
				tc.faults()
			}
			data := payload(tc.size, uint64(tc.size))
			attrs, err := c.Upload(context.Background(), bucket, name, bytes.NewReader(data),
				uploader.WithParallelUpload(uploader.ParallelUpload{PartSize: 5 * mib, Parts: 3}),
				uploader.WithAttrs(uploader.ObjectAttrs{ContentType: "application/x-test", Metadata: map[string]string{"k": "v"}}))
			e.srv.ClearFaults()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			sameBytes(t, name, e.content(name), data)
			o, _ := e.srv.Object(bucket, name)
			if o.ContentType != "application/x-test" || o.Metadata["k"] != "v" {
				t.Errorf("%s: stored attributes %q %v", name, o.ContentType, o.Metadata)
			}
			if attrs.Size != int64(len(data)) || attrs.CRC32C != crcOf(data) || attrs.Generation == 0 {
				t.Errorf("%s: attrs size %d crc %08x gen %d, want %d %08x", name, attrs.Size, attrs.CRC32C, attrs.Generation, len(data), crcOf(data))
			}
			m := methods(e)
			parts := (tc.size + 5*mib - 1) / (5 * mib)
			if m[mpComplete] < 1 || m[mpPart] < parts || m["objects.compose"]+m["ComposeObject"] != 0 {
				t.Errorf("%s: calls %v, want a complete and %d parts, no compose", name, m, parts)
			}
			objs, _ := e.srv.ListObjects(bucket, tr+"/")
			for _, ob := range objs {
				if ob.Name != name && ob.Name[:len(tr)+1] != tr+"/" {
					t.Errorf("%s: object %q left", name, ob.Name)
				}
			}
		}
	}
	if n := e.count(); n != 10 {
		t.Errorf("%d objects in the bucket, want the 10 uploaded", n)
	}
	noUploadsLeft(t, e)
}

// noUploadsLeft fails the test if the fake holds a multipart upload that
// was neither completed nor aborted, once the clients' background work
// ended.
func noUploadsLeft(t *testing.T, e *env) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ups := e.srv.MultipartUploads()
		if len(ups) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d multipart uploads left: %+v", len(ups), ups)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMultipartFailure: a part that fails for good fails the upload with
// its cause, and the upload is aborted: nothing stored, nothing left.
// A cancelled context likewise.
func TestMultipartFailure(t *testing.T) {
	e := newEnv(t)
	for tr, c := range mpClients(t, e) {
		name := tr + "/denied"
		e.srv.FailCall(mpPart, 3, codes.PermissionDenied)
		_, err := c.Upload(context.Background(), bucket, name, bytes.NewReader(payload(20*mib, 3)),
			uploader.WithParallelUpload(uploader.ParallelUpload{PartSize: 5 * mib, Parts: 2}))
		e.srv.ClearFaults()
		if uploader.CodeOf(err) != codes.PermissionDenied || uploader.IsOutcomeUnknown(err) {
			t.Fatalf("%s: %v, want PermissionDenied", name, err)
		}
		e.absent(name)

		name = tr + "/cancelled"
		ctx, cancel := context.WithCancel(context.Background())
		w, err := c.NewWriter(ctx, bucket, name, uploader.WithParallelUpload(uploader.ParallelUpload{PartSize: 5 * mib, Parts: 2}))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(payload(12*mib, 4)); err != nil {
			t.Fatal(err)
		}
		cancel()
		if err := w.Close(); !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: Close after cancel: %v", name, err)
		}
		e.absent(name)
	}
	for _, c := range mpClients(t, e) {
		c.Close() // waits for the aborts
	}
	noUploadsLeft(t, e)
	if m := methods(e); m[mpAbort] < 2 {
		t.Errorf("calls %v: want an abort per failed upload", m)
	}
}

// TestMultipartRefused: what the XML API's multipart upload cannot carry
// is refused at once when asked for, and takes a compose by default.
func TestMultipartRefused(t *testing.T) {
	e := newEnv(t)
	via := func(m uploader.ParallelMethod, size int64) uploader.WriterOption {
		return uploader.WithParallelUpload(uploader.ParallelUpload{Method: m, PartSize: size})
	}
	for _, tc := range []struct {
		name string
		opts []uploader.WriterOption
	}{
		{"precondition", []uploader.WriterOption{via(uploader.ViaMultipart, 0), uploader.WithConditions(uploader.Conditions{DoesNotExist: true})}},
		{"small parts", []uploader.WriterOption{via(uploader.ViaMultipart, mib)}},
		{"hold", []uploader.WriterOption{via(uploader.ViaMultipart, 0), uploader.WithAttrs(uploader.ObjectAttrs{TemporaryHold: true})}},
		{"unknown method", []uploader.WriterOption{via(7, 0)}},
	} {
		before := len(e.srv.Calls())
		if _, err := mpClients(t, e)["gRPC"].NewWriter(context.Background(), bucket, "o", tc.opts...); !isInvalid(err) {
			t.Errorf("%s: %v, want InvalidArgument", tc.name, err)
		}
		if n := len(e.srv.Calls()) - before; n != 0 {
			t.Errorf("%s: %d calls", tc.name, n)
		}
	}
	// A gRPC client dialled elsewhere than GCS knows no XML endpoint:
	// asked for, the multipart upload is refused; by default, a compose.
	if _, err := e.c.NewWriter(context.Background(), bucket, "o", via(uploader.ViaMultipart, 0)); !isInvalid(err) {
		t.Errorf("ViaMultipart without an XML endpoint: %v", err)
	}
	e.srv.ResetCalls()
	if _, err := e.c.Upload(context.Background(), bucket, "composed", bytes.NewReader(payload(12*mib, 6)), via(0, 0)); err != nil {
		t.Fatal(err)
	}
	if m := methods(e); m["ComposeObject"] == 0 || m[mpInitiate] != 0 {
		t.Errorf("calls %v: want a compose", m)
	}
	// By default, a precondition takes a compose, which honours it.
	e.srv.ResetCalls()
	data := payload(12*mib, 5)
	if _, err := mpClients(t, e)["JSON"].Upload(context.Background(), bucket, "cond", bytes.NewReader(data),
		via(0, 5*mib), uploader.WithConditions(uploader.Conditions{DoesNotExist: true})); err != nil {
		t.Fatal(err)
	}
	if m := methods(e); m["objects.compose"] == 0 || m[mpInitiate] != 0 {
		t.Errorf("calls %v: want a compose", m)
	}
	sameBytes(t, "cond", e.content("cond"), data)
}

// TestMultipartCreateOnly: a credential with roles/storage.objectCreator
// alone makes a multipart upload (the default) of a new object (64 MiB;
// OBJUP_CREATOR_MIB sets another size), and a
// parallel composite upload says at once, before any part goes out, that
// it needs storage.objects.delete.
func TestMultipartCreateOnly(t *testing.T) {
	e := newEnvFake(t, []fakes.Option{fakes.WithCredential("creator", fakes.RoleObjectCreator)})
	ctx := header.Append(context.Background(), "authorization", "Bearer creator")
	size := 64 * mib
	if testing.Short() {
		size = 16 * mib
	}
	if v, err := strconv.Atoi(os.Getenv("OBJUP_CREATOR_MIB")); err == nil && v > 0 {
		size = v * mib // 1024: the 1 GiB of the README's least-privilege run
	}
	for tr, c := range mpClients(t, e) {
		data := payload(size, 6)
		name := tr + "/big"
		if _, err := c.Upload(ctx, bucket, name, bytes.NewReader(data), uploader.WithParallelUpload(uploader.ParallelUpload{})); err != nil {
			t.Fatalf("%s: multipart upload with a create-only credential: %v", tr, err)
		}
		sameBytes(t, name, e.content(name), data)

		e.srv.ResetCalls()
		_, err := c.Upload(ctx, bucket, tr+"/composite", bytes.NewReader(data),
			uploader.WithParallelUpload(uploader.ParallelUpload{Method: uploader.ViaCompose}))
		if uploader.CodeOf(err) != codes.PermissionDenied || uploader.IsOutcomeUnknown(err) {
			t.Fatalf("%s: composite upload with a create-only credential: %v, want PermissionDenied", tr, err)
		}
		for _, call := range e.srv.Calls() {
			if call.Method == "objects.insert" || call.Method == "StartResumableWrite" || call.Method == "WriteObject" {
				t.Errorf("%s: %s went out before the refusal", tr, call.Method)
			}
		}
		e.absent(tr + "/composite")
	}
}

// abandonedMultipart is a multipart upload of 5 MiB parts by a gRPC client
// whose XML calls go through a proxy, abandoned as a killed process leaves
// it (the proxy closes before the abort can go out) once the service
// stored a part: its handle.
func abandonedMultipart(t *testing.T, e *env, name string, data []byte) uploader.Handle {
	t.Helper()
	p, err := faultproxy.New(strings.TrimPrefix(e.srv.HTTPURL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := uploader.NewClient(context.Background(), append(dialOptions(e.srv), retryWith(uploader.Retry{Deadline: time.Second}),
		uploader.WithXMLEndpoint("http://"+p.Addr()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w, err := c.NewWriter(context.Background(), bucket, name, uploader.WithParallelUpload(uploader.ParallelUpload{PartSize: 5 * mib, Parts: 2}),
		uploader.WithAttrs(uploader.ObjectAttrs{ContentType: "application/x-kept"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data[:len(data)/2]); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		h, ok := w.Handle()
		if ok && h.Kind == uploader.KindMultipart {
			for _, pt := range h.Parts {
				if pt.ETag != "" {
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

// TestResumeMultipart: a multipart upload a killed process left goes on
// in a client of either API from its handle (through JSON): the parts the
// service holds with the source's bytes are not sent again, and the object
// is stored once, exact, with the attributes the first Writer gave it. A
// changed source is refused before anything is sent; Discard aborts.
func TestResumeMultipart(t *testing.T) {
	e := newEnv(t)
	for tr, c := range mpClients(t, e) {
		name := tr + "/resumed"
		data := payload(23*mib, 11)
		h := roundTrip(t, abandonedMultipart(t, e, name, data))
		if h.UploadID == "" || h.API != "xml" || h.PartSize != 5*mib {
			t.Fatalf("%s: handle %+v", name, h)
		}
		stored := 0
		changed := append([]byte(nil), data...)
		for _, pt := range h.Parts {
			if pt.ETag != "" {
				stored++
				// A byte the service holds is changed.
				changed[pt.Offset+1] ^= 1
			}
		}
		e.srv.ResetCalls()
		if _, err := c.Resume(context.Background(), h, bytes.NewReader(changed)); !uploader.IsSourceChanged(err) {
			t.Fatalf("%s: resume from a changed source: %v", name, err)
		}
		if m := methods(e); m[mpPart]+m[mpComplete] != 0 {
			t.Fatalf("%s: calls %v for a changed source", name, m)
		}
		e.srv.ResetCalls()
		attrs, err := c.Resume(context.Background(), h, bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sameBytes(t, name, e.content(name), data)
		if o, _ := e.srv.Object(bucket, name); o.ContentType != "application/x-kept" || attrs.CRC32C != crcOf(data) {
			t.Errorf("%s: content type %q, CRC32C %08x", name, o.ContentType, attrs.CRC32C)
		}
		if m := methods(e); m[mpPart] > 5-stored || m[mpInitiate] != 0 || m[mpComplete] != 1 {
			t.Errorf("%s: calls %v; %d parts were stored before", name, m, stored)
		}
	}
	h := abandonedMultipart(t, e, "discarded", payload(12*mib, 12))
	// A gRPC client dialled elsewhere than GCS, with no XML endpoint,
	// says so.
	if err := e.c.Discard(context.Background(), h); !isInvalid(err) || !strings.Contains(err.Error(), "WithXMLEndpoint") {
		t.Fatalf("Discard by a client without an XML endpoint: %v", err)
	}
	if err := mpClients(t, e)["gRPC"].Discard(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	e.absent("discarded")
	noUploadsLeft(t, e)
}

// roundTrip returns h as it comes back from JSON.
func roundTrip(t *testing.T, h uploader.Handle) uploader.Handle {
	t.Helper()
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var back uploader.Handle
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	return back
}

// TestMultipartSharedBudget: multipart uploads sharing a pool whose budget
// cannot hold a part for each wait for the buffers others give back; when
// the budget is all held by parts under 5 MiB, which cannot go out, one of
// them fails with ResourceExhausted and gives its buffers back, so none
// hangs. Every upload that succeeds is exact; none that fails is stored.
func TestMultipartSharedBudget(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget int64
		stuck  bool // the first writes fill the budget with parts under 5 MiB
	}{
		{"room for a part each", 48 * mib, false},
		{"the budget held by small parts", 12 * mib, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			p, err := pool.New(pool.WithBudget(tc.budget))
			if err != nil {
				t.Fatal(err)
			}
			c := httpClient(t, e.srv.HTTPURL(), uploader.WithPool(p))
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			const n = 4
			ws := make([]*uploader.Writer, n)
			datas := make([][]byte, n)
			for i := range ws {
				datas[i] = payload(14*mib, uint64(i))
				ws[i], err = c.NewWriter(ctx, bucket, fmt.Sprint("shared/", i),
					uploader.WithParallelUpload(uploader.ParallelUpload{PartSize: 5 * mib, Parts: 2, Method: uploader.ViaMultipart}))
				if err != nil {
					t.Fatal(err)
				}
				// 3 MiB each: with a 12 MiB budget, the pool is then all
				// held by parts that cannot go out.
				if _, err := ws[i].Write(datas[i][:3*mib]); err != nil {
					t.Fatal(err)
				}
			}
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i, w := range ws {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := w.Write(datas[i][3*mib:]); err != nil {
						errs[i] = w.CloseWithError(err)
						return
					}
					errs[i] = w.Close()
				}()
			}
			wg.Wait()
			ok, failed := 0, 0
			for i, err := range errs {
				name := fmt.Sprint("shared/", i)
				switch {
				case err == nil:
					ok++
					sameBytes(t, name, e.content(name), datas[i])
				case uploader.CodeOf(err) == codes.ResourceExhausted && tc.stuck:
					failed++
					t.Logf("%s: %v", name, err)
					e.absent(name)
				default:
					t.Errorf("%s: %v", name, err)
				}
			}
			if ok == 0 || tc.stuck && failed == 0 {
				t.Errorf("%d stored, %d failed for the budget", ok, failed)
			}
			c.Close()
			if s := p.Stats(); s.InUseBytes != 0 {
				t.Errorf("%d bytes of the pool in use after the uploads", s.InUseBytes)
			}
			noUploadsLeft(t, e)
			t.Logf("%d of %d uploads stored, %d failed for the budget", ok, n, failed)
		})
	}
}
