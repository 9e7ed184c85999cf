package fakes_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/internal/wire"
)

// TestCommitDelaysEveryWrite: WithCommitDelays draws one delay for each
// write that stores an object, over both APIs, and none for a write that
// stores nothing yet (a session's start, a chunk of it).
func TestCommitDelaysEveryWrite(t *testing.T) {
	var draws atomic.Int64
	srv, cc := start(t, fakes.WithCommitDelays(func() time.Duration { draws.Add(1); return 0 }))
	content := payload(5000, 9)
	put(t, cc, "src", content)
	for _, tc := range []struct {
		name  string
		write func(t *testing.T)
		want  int64 // delays drawn
	}{
		{"grpc WriteObject", func(t *testing.T) { put(t, cc, "w1", content) }, 1},
		{"grpc BidiWriteObject one-shot", func(t *testing.T) {
			if _, err := bidi(ctxT(t), cc, bidiChunks(content, 2*mib, bidiSpec(spec("w2")))...); err != nil {
				t.Fatal(err)
			}
		}, 1},
		{"grpc resumable start", func(t *testing.T) { startResumable(t, cc, spec("w3")) }, 0},
		{"grpc resumable finish", func(t *testing.T) {
			id := startResumable(t, cc, spec("w4"))
			if _, err := bidi(ctxT(t), cc, bidiChunks(content, 1024, bidiUpload(id))...); err != nil {
				t.Fatal(err)
			}
		}, 1},
		{"grpc ComposeObject", func(t *testing.T) {
			req := &wire.ComposeObjectRequest{Destination: &wire.Object{Bucket: bucketRes, Name: "w5"},
				SourceObjects: []*wire.ComposeObjectRequest_SourceObject{{Name: "src"}, {Name: "src"}}}
			if err := cc.Invoke(ctxT(t), wire.MethodComposeObject, req, new(wire.Object)); err != nil {
				t.Fatal(err)
			}
		}, 1},
		{"grpc appendable finalize", func(t *testing.T) {
			a := openAppendStream(t, ctxT(t), cc)
			a.send(creating("w6", data(0, []byte("abc"))))
			a.send(finish(3, []byte("abc")))
			a.st.CloseSend()
			for {
				if _, err := a.recv(); err != nil {
					break
				}
			}
		}, 1},
		{"json media", func(t *testing.T) { httpPut(t, srv, "w7", content) }, 1},
		{"json multipart", func(t *testing.T) {
			body, ct := multipartBody(t, `{"name":"w8"}`, "application/octet-stream", content)
			if r := do(t, srv, "POST", uploadPath("multipart", ""), body, "Content-Type", ct); r.status != http.StatusOK {
				t.Fatalf("status %d %s", r.status, r.body)
			}
		}, 1},
		{"json resumable", func(t *testing.T) {
			u := startSession(t, srv, "w9", "")
			if r := do(t, srv, "PUT", u, content); r.status != http.StatusOK {
				t.Fatalf("status %d %s", r.status, r.body)
			}
		}, 1},
		{"json compose", func(t *testing.T) {
			body := []byte(`{"sourceObjects":[{"name":"src"},{"name":"src"}]}`)
			if r := do(t, srv, "POST", objPath("w10")+"/compose", body); r.status != http.StatusOK {
				t.Fatalf("status %d %s", r.status, r.body)
			}
		}, 1},
		{"json copy", func(t *testing.T) {
			if r := do(t, srv, "POST", objPath("src")+"/copyTo/b/"+bucket+"/o/w11", []byte(`{}`)); r.status != http.StatusOK {
				t.Fatalf("status %d %s", r.status, r.body)
			}
		}, 1},
		{"json rewrite", func(t *testing.T) {
			if r := do(t, srv, "POST", objPath("src")+"/rewriteTo/b/"+bucket+"/o/w12", []byte(`{}`)); r.status != http.StatusOK {
				t.Fatalf("status %d %s", r.status, r.body)
			}
		}, 1},
		{"json get", func(t *testing.T) { media(t, srv, "src", content) }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := draws.Load()
			tc.write(t)
			if got := draws.Load() - before; got != tc.want {
				t.Fatalf("%d commit delays drawn, want %d", got, tc.want)
			}
		})
	}
}

// TestCommitJitter: a seed gives the same delays every time, within the
// bounds, and another seed others.
func TestCommitJitter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lo, hi time.Duration
	}{
		{"range", 10 * time.Millisecond, 2 * time.Second},
		{"fixed", time.Second, time.Second},
		{"from zero", 0, time.Microsecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b, c := fakes.CommitJitter(tc.lo, tc.hi, 7), fakes.CommitJitter(tc.lo, tc.hi, 7), fakes.CommitJitter(tc.lo, tc.hi, 8)
			differ := false
			for range 1000 {
				x, y, z := a(), b(), c()
				if x != y {
					t.Fatalf("seed 7 drew %v, then %v", x, y)
				}
				if x < tc.lo || x > tc.hi || z < tc.lo || z > tc.hi {
					t.Fatalf("drew %v and %v, outside [%v, %v]", x, z, tc.lo, tc.hi)
				}
				differ = differ || x != z
			}
			if differ != (tc.lo != tc.hi) {
				t.Fatalf("seeds 7 and 8 differ: %v", differ)
			}
		})
	}
	for _, bad := range [][2]time.Duration{{-1, 0}, {2, 1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("CommitJitter(%v, %v) did not panic", bad[0], bad[1])
				}
			}()
			fakes.CommitJitter(bad[0], bad[1], 1)
		}()
	}
}

// TestDeadlineDrop: a gRPC write whose deadline passed before it was
// applied is stored by default (GCS is not shown to drop it) and dropped
// with WithDeadlineDrop. The commit waits until the server's context of
// the request ended at its deadline: no timing is assumed.
func TestDeadlineDrop(t *testing.T) {
	for _, tc := range []struct {
		name string
		drop bool
	}{
		{"applied by default", false},
		{"dropped with WithDeadlineDrop", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The commit lasts until the request's deadline at the server
			// has passed. (Waiting for ctx to end is not that: the
			// client's cancel, sent when its own timer fires, may reach
			// the server before the server's deadline, which runs from
			// when the request arrived.)
			opts := []fakes.Option{fakes.WithCommitWait(func(ctx context.Context) {
				if dl, ok := ctx.Deadline(); ok {
					<-time.After(time.Until(dl))
				}
			})}
			if tc.drop {
				opts = append(opts, fakes.WithDeadlineDrop())
			}
			srv, cc := start(t, opts...)
			ctx, cancel := context.WithTimeout(ctxT(t), 200*time.Millisecond)
			defer cancel()
			_, err := writeObject(ctx, cc, chunks(payload(1000, 1), 2*mib, withSpec(spec("late")))...)
			// Applied, the answer may still beat the client's own
			// timer (under load): OK is then right too.
			if code := status.Code(err); code != codes.DeadlineExceeded && (tc.drop || code != codes.OK) {
				t.Fatalf("the client got %v", err)
			}
			// Once the call is recorded its handler returned: the
			// write was stored or dropped. (Its code is the
			// deadline's either way: the answer could not go out.)
			serverCode(t, srv, "WriteObject", "late")
			if tc.drop {
				absent(t, cc, "late")
			} else {
				get(t, cc, "late")
			}
		})
	}
}

// serverCode waits until the server recorded a call of method on object,
// and returns its code.
func serverCode(t *testing.T, srv *fakes.Server, method, object string) codes.Code {
	t.Helper()
	ctx := ctxT(t)
	for {
		for _, c := range srv.Calls() {
			if c.Method == method && c.Object == object {
				return c.Code
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal(errors.New("the server never recorded the call"))
		case <-time.After(5 * time.Millisecond):
		}
	}
}
