package uploadertest_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"google.golang.org/api/option"
	"google.golang.org/grpc/codes"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/fakes/faultproxy"
	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader"
	"github.com/objup/objup/uploader/experimental"
)

// overrunLimit is how long past its context a call may run in these tests:
// experimental.AfterContext, and room for a loaded machine. The faults they
// inject last several times longer, so a call that waits for them fails.
const overrunLimit = experimental.AfterContext + 1500*time.Millisecond

// TestLostAnswerIsResolved: the service stores the object and the answer
// is lost (the connection breaks after the commit). What the upload
// reports is what GCS's own mechanisms make known, never a guess from the
// object's size and checksum: a session (resumable uploads, and any upload
// WithResumable) asks the session, which is exact, and succeeds with the
// stored object's attributes; a parallel upload's part lives under a name
// of the upload's own, so its object is the part's; a one-shot write has
// no identity once its answer is lost, so its outcome is unknown (the
// object is stored, and the error says it may be), with or without a
// precondition.
func TestLostAnswerIsResolved(t *testing.T) {
	const part = 2 * q
	for _, tc := range []struct {
		name    string
		method  string
		size    int
		opts    []uploader.WriterOption
		unknown bool
	}{
		{"one-shot", fakes.MethodWriteObject, kib, nil, true},
		{"one-shot, does not exist", fakes.MethodWriteObject, kib, []uploader.WriterOption{uploader.WithConditions(uploader.Conditions{DoesNotExist: true})}, true},
		{"one-shot, retry always: the retry stores it again", fakes.MethodWriteObject, kib, []uploader.WriterOption{uploader.WithRetry(uploader.Retry{Policy: uploader.RetryAlways})}, false},
		{"small, resumable", fakes.MethodBidiWriteObject, kib, []uploader.WriterOption{uploader.WithResumable()}, false},
		{"small, resumable, does not exist", fakes.MethodBidiWriteObject, kib, []uploader.WriterOption{uploader.WithResumable(), uploader.WithConditions(uploader.Conditions{DoesNotExist: true})}, false},
		{"resumable", fakes.MethodBidiWriteObject, 3 * mib, nil, false},
		{"resumable, does not exist", fakes.MethodBidiWriteObject, 3 * mib, []uploader.WriterOption{uploader.WithConditions(uploader.Conditions{DoesNotExist: true})}, false},
		{"parallel, a part's answer", fakes.MethodBidiWriteObject, 5*part + 7, []uploader.WriterOption{uploader.WithParallelUpload(uploader.ParallelUpload{PartSize: part, Parts: 1})}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.srv.LoseAnswer(tc.method)
			data := payload(tc.size, 41)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			attrs, err := e.c.Upload(ctx, bucket, "lost", bytes.NewReader(data), tc.opts...)
			switch {
			case tc.unknown && (err == nil || !uploader.IsOutcomeUnknown(err)):
				t.Fatalf("Upload: %v, want an error of unknown outcome", err)
			case !tc.unknown && err != nil:
				t.Fatalf("Upload: %v (code %v, outcome unknown %v); the object is stored: %v", err, uploader.CodeOf(err), uploader.IsOutcomeUnknown(err), e.exists("lost"))
			}
			sameBytes(t, "stored", e.content("lost"), data)
			if o, _ := e.srv.Object(bucket, "lost"); !tc.unknown && (attrs == nil || attrs.Generation != o.Generation || attrs.Size != int64(len(data))) {
				t.Fatalf("attributes %+v, want those of the stored object (generation %d)", attrs, o.Generation)
			}
			if err := e.c.Close(); err != nil {
				t.Fatal(err)
			}
			if n := e.count(); n != 1 {
				t.Fatalf("%d objects in the bucket, want the one uploaded", n)
			}
		})
	}
}

// TestStalledPartReturnsByItsContext: a parallel upload whose parts' writes
// are in the service's hands (a commit that takes seconds) when the
// context ends returns by its context, not when the parts are answered;
// the parts are awaited and deleted in the background, and Client.Close
// waits for that: nothing is stored, no temporary object is left, and
// every buffer is back.
func TestStalledPartReturnsByItsContext(t *testing.T) {
	const part = 2 * q
	for _, tr := range []string{"gRPC", "JSON"} {
		// Not parallel: each subtest's fake checks for leaked goroutines
		// when it ends (goleak sees the whole process), and would count
		// the other's, still running, as its own.
		t.Run(tr, func(t *testing.T) {
			p, err := pool.New(pool.WithBudget(16 * q))
			if err != nil {
				t.Fatal(err)
			}
			e := newEnvFake(t, []fakes.Option{fakes.WithCommitDelay(5 * time.Second)})
			c := parallelClients(t, e, p)[tr]
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			_, err = c.Upload(ctx, bucket, "big", bytes.NewReader(payload(6*part, 42)),
				uploader.WithParallelUpload(uploader.ParallelUpload{PartSize: part, Parts: 2}))
			overrun := time.Since(deadlineOf(ctx))
			if uploader.CodeOf(err) != uploader.CodeOf(context.DeadlineExceeded) {
				t.Fatalf("Upload: %v, want DeadlineExceeded", err)
			}
			if overrun > overrunLimit {
				t.Fatalf("Upload returned %v after its context's deadline", overrun)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			e.absent("big")
			e.noTemporaries()
			if n := p.Stats().InUseBytes; n != 0 {
				t.Errorf("%d bytes of buffers in use after Client.Close", n)
			}
		})
	}
}

func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// TestLastAnswerPastTheContext: the context ends while the service commits
// the finished object (its last answer comes after the deadline). Close
// returns by its context, and its error never claims a plain failure for
// what the service stores: it is nil (the object was found stored) or an
// error for which IsOutcomeUnknown holds.
func TestLastAnswerPastTheContext(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int
		opts []uploader.WriterOption
	}{
		{"one-shot", kib, nil},
		{"one-shot, does not exist", kib, []uploader.WriterOption{uploader.WithConditions(uploader.Conditions{DoesNotExist: true})}},
		{"resumable", 3 * mib, nil},
	} {
		for _, tr := range []string{"gRPC", "JSON"} {
			t.Run(tr+"/"+tc.name, func(t *testing.T) {
				e := newEnvFake(t, []fakes.Option{fakes.WithCommitDelay(2 * time.Second)})
				c := e.c
				if tr == "JSON" {
					c = httpClient(t, e.srv.HTTPURL())
				}
				data := payload(tc.size, 43)
				ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
				defer cancel()
				_, err := c.Upload(ctx, bucket, "late", bytes.NewReader(data), tc.opts...)
				if overrun := time.Since(deadlineOf(ctx)); overrun > overrunLimit {
					t.Fatalf("Upload returned %v after its context's deadline", overrun)
				}
				// The fake's Close lets the commit finish.
				if err := e.srv.Close(); err != nil {
					t.Fatal(err)
				}
				stored := e.exists("late")
				switch {
				case err == nil && !stored:
					t.Fatal("Upload succeeded, nothing is stored")
				case err == nil:
					sameBytes(t, "stored", e.content("late"), data)
				case stored && !uploader.IsOutcomeUnknown(err):
					t.Fatalf("Upload: %v (code %v), a plain failure, and the object is stored", err, uploader.CodeOf(err))
				case !errors.Is(err, context.DeadlineExceeded):
					t.Fatalf("Upload: %v, want the context's DeadlineExceeded", err)
				}
			})
		}
	}
}

// TestOutcomeUnknownIsNarrow: errors that leave nothing behind are never
// of unknown outcome: a refusal, a cancellation before anything was sent.
func TestOutcomeUnknownIsNarrow(t *testing.T) {
	e := newEnv(t)
	if _, err := e.c.Upload(context.Background(), bucket, "x", bytes.NewReader([]byte("x"))); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		run  func() error
	}{
		{"precondition", func() error {
			_, err := e.c.Upload(context.Background(), bucket, "x", bytes.NewReader([]byte("y")), uploader.WithConditions(uploader.Conditions{DoesNotExist: true}))
			return err
		}},
		{"cancelled before sending", func() error {
			_, err := e.c.Upload(cancelled, bucket, "y", bytes.NewReader([]byte("y")))
			return err
		}},
		{"missing bucket", func() error {
			_, err := e.c.Upload(context.Background(), "no-such-bucket", "y", bytes.NewReader([]byte("y")))
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if err == nil || uploader.IsOutcomeUnknown(err) {
				t.Fatalf("%v: want a failure of known outcome", err)
			}
		})
	}
	if uploader.IsOutcomeUnknown(nil) || uploader.IsOutcomeUnknown(io.EOF) {
		t.Fatal("IsOutcomeUnknown holds for an error that is not objup's")
	}
	e.absent("y")
}

// proxied is a client of e through a fault proxy in front of one of the
// fake's ports: its gRPC port, or its JSON port through
// STORAGE_EMULATOR_HOST (the emulator's HTTP/1.1 transport, whose
// abandoned requests' connections are cut).
func proxied(t *testing.T, e *env, tr string, opts ...option.ClientOption) (*uploader.Client, *faultproxy.Proxy) {
	t.Helper()
	target := e.srv.GRPCAddr()
	if tr == "JSON" {
		target = strings.TrimPrefix(e.srv.HTTPURL(), "http://")
	}
	p, err := faultproxy.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	opts = append([]option.ClientOption{uploader.WithRetry(fastRetry)}, opts...)
	if tr == "JSON" {
		t.Setenv("STORAGE_EMULATOR_HOST", p.Addr())
		c, err := uploader.NewClient(context.Background(), append([]option.ClientOption{uploader.WithHTTP()}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, p
	}
	return clientVia(t, p.Addr(), opts...), p
}

// TestAnswerResetIsResolved: the connection is reset five bytes into the
// answer of a one-shot upload, which the service stored. The failure is a
// network failure (Unavailable, never Internal) of unknown outcome: a
// one-shot write has no identity to look up. The same upload WithResumable
// asks its session and succeeds.
func TestAnswerResetIsResolved(t *testing.T) {
	for _, tr := range []string{"gRPC", "JSON"} {
		t.Run(tr, func(t *testing.T) {
			e := newEnv(t)
			c, p := proxied(t, e, tr)
			// Warm the connections, so that the next bytes down are the
			// answer's.
			if _, err := c.Upload(context.Background(), bucket, "warm", bytes.NewReader([]byte("w"))); err != nil {
				t.Fatal(err)
			}
			if tr == "gRPC" {
				// gRPC's answer follows frames of its own: lose the answer
				// at the service instead.
				e.srv.LoseAnswer(fakes.MethodWriteObject)
			} else {
				p.Inject(faultproxy.Fault{Kind: faultproxy.Reset, Dir: faultproxy.Down, After: 5})
			}
			data := payload(kib, 44)
			_, err := c.Upload(context.Background(), bucket, "reset", bytes.NewReader(data))
			if !uploader.IsOutcomeUnknown(err) || uploader.CodeOf(err) != codes.Unavailable {
				t.Fatalf("Upload: %v (code %v), want Unavailable of unknown outcome; stored: %v", err, uploader.CodeOf(err), e.exists("reset"))
			}
			sameBytes(t, "stored", e.content("reset"), data)
			if tr == "JSON" && p.Stats().Resets == 0 {
				t.Fatal("the proxy reset nothing")
			}
			if tr == "gRPC" {
				e.srv.LoseAnswer(fakes.MethodBidiWriteObject)
			} else {
				// The session's last PUT is the upload's third request.
				p.Inject(faultproxy.Fault{Kind: faultproxy.Reset, Dir: faultproxy.Down, After: 5})
			}
			a, err := c.Upload(context.Background(), bucket, "session", bytes.NewReader(data), uploader.WithResumable())
			if err != nil {
				t.Fatalf("Upload WithResumable: %v (code %v); stored: %v", err, uploader.CodeOf(err), e.exists("session"))
			}
			if o, _ := e.srv.Object(bucket, "session"); a.Generation != o.Generation {
				t.Fatalf("generation %d, the stored one is %d", a.Generation, o.Generation)
			}
			sameBytes(t, "stored", e.content("session"), data)
		})
	}
}

// TestAbandonedAttemptDoesNotLandLate: the first attempt of an upload
// stalls in the path past its attempt timeout; the retry succeeds on a new
// stream; the caller then deletes the object. When the stall ends the path
// delivers what it held (the attempt's stream is reset, its connection is
// not: other uploads share it), and the service reads the abandoned
// attempt whole. A one-shot write could then store the object again, and
// no client can take that back; an upload through a session cannot: the
// session finalized once, and a late message of it makes no second
// generation. So the object stays deleted for a resumable upload and for a
// small one WithResumable, over both APIs.
func TestAbandonedAttemptDoesNotLandLate(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int
		opts []uploader.WriterOption
	}{
		{"small, resumable", kib, []uploader.WriterOption{uploader.WithResumable()}},
		{"small, resumable, does not exist", kib, []uploader.WriterOption{uploader.WithResumable(), uploader.WithConditions(uploader.Conditions{DoesNotExist: true})}},
		{"resumable", 3 * q, nil},
	} {
		for _, tr := range []string{"gRPC", "JSON"} {
			t.Run(tr+"/"+tc.name, func(t *testing.T) {
				e := newEnv(t)
				c, p := proxied(t, e, tr, retryWith(uploader.Retry{AttemptTimeout: 500 * time.Millisecond}))
				if _, err := c.Upload(context.Background(), bucket, "warm", bytes.NewReader([]byte("w"))); err != nil {
					t.Fatal(err)
				}
				// The stall catches the session's first stream or PUT:
				// the session's start is answered first.
				p.Inject(faultproxy.Fault{Kind: faultproxy.Stall, Dir: faultproxy.Up, After: 1, Stall: 3 * time.Second})
				data := payload(tc.size, 45)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if _, err := c.Upload(ctx, bucket, "late", bytes.NewReader(data), tc.opts...); err != nil {
					t.Fatalf("Upload: %v", err)
				}
				sameBytes(t, "stored", e.content("late"), data)
				if p.Stats().Stalls == 0 {
					t.Fatal("no stall happened")
				}
				e.delete("late")
				if err := c.Close(); err != nil {
					t.Fatal(err)
				}
				sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer scancel()
				if err := p.Settle(sctx); err != nil {
					t.Fatal(err)
				}
				if err := e.srv.Close(); err != nil {
					t.Fatal(err)
				}
				e.absent("late")
			})
		}
	}
}

// delete deletes an object through the fake's JSON API, as a user would.
func (e *env) delete(name string) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodDelete, e.srv.HTTPURL()+"/storage/v1/b/"+bucket+"/o/"+url.PathEscape(name), nil)
	if err != nil {
		e.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusOK {
		e.t.Fatalf("DELETE %s: %s", name, resp.Status)
	}
}
