package mode

import (
	"testing"

	"github.com/objup/objup/chunker"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/uploader/internal/xfer"
)

// TestOneShot: a one-shot upload's attempts against a scripted transport:
// what is retried (only an idempotent write, a precondition making it
// so), and when the outcome is unknown (an answer was lost, and no later
// answer says what happened).
func TestOneShot(t *testing.T) {
	unavailable := status.Error(codes.Unavailable, "connection reset")
	for _, tc := range []struct {
		name       string
		idempotent bool
		writes     []writeOutcome
		code       codes.Code
		unknown    bool
		attempts   int
	}{
		{name: "stored", attempts: 1},
		{name: "refused before sending, retried", idempotent: true,
			writes: []writeOutcome{{false, unavailable}}, attempts: 2},
		{name: "answer lost, retried, stored", idempotent: true,
			writes: []writeOutcome{{true, unavailable}}, attempts: 2},
		{name: "answer lost, then the precondition fails", idempotent: true,
			writes: []writeOutcome{{true, unavailable}, {true, status.Error(codes.FailedPrecondition, "exists")}},
			code:   codes.FailedPrecondition, unknown: true, attempts: 2},
		{name: "answer lost, not idempotent: not repeated",
			writes: []writeOutcome{{true, unavailable}}, code: codes.Unavailable, unknown: true, attempts: 1},
		{name: "permission denied",
			writes: []writeOutcome{{true, status.Error(codes.PermissionDenied, "no")}}, code: codes.PermissionDenied, attempts: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &testAlloc{size: 4 << 10}
			u := newTestRequest(a)
			if tc.idempotent {
				u.Scratch.Spec.IfGenerationMatch = new(int64)
			}
			tr := &fakeTransport{writes: tc.writes}
			p, _ := testParams(u, tr, a)
			data := payloadOf(1000)
			o, err := OneShot{Request: u, Transport: tr, Engine: p.Engine}.Finish(a.chunk(data, 0))
			switch {
			case tc.code == codes.OK && (err != nil || o.GetSize() != int64(len(data))):
				t.Fatalf("Finish: %v, %v; want the object of %d bytes", o, err, len(data))
			case tc.code != codes.OK && xfer.CodeOf(err) != tc.code:
				t.Fatalf("Finish: %v, want code %v", err, tc.code)
			case xfer.Unknown(err) != tc.unknown:
				t.Fatalf("Finish: %v: unknown outcome %v, want %v", err, xfer.Unknown(err), tc.unknown)
			}
			if n := len(tr.callsNow()); n != tc.attempts {
				t.Fatalf("%d attempts, want %d", n, tc.attempts)
			}
			if u.One[0] != nil {
				t.Fatal("the request still holds the chunk")
			}
			if n := a.out.Load(); n != 0 {
				t.Fatalf("%d buffers not given back", n)
			}
		})
	}
}

// TestSession: a resumable session against a scripted transport: its
// chunks reach the service in order, once each, across a stream that
// breaks (a status query, a new stream from the persisted size), and every
// buffer comes back; a start the service refuses fails at once.
func TestSession(t *testing.T) {
	const chunk = 1 << 10
	for _, tc := range []struct {
		name     string
		size     int
		breakAt  int64
		startErr error
		code     codes.Code
		calls    []string
		resumes  int32
	}{
		{name: "one stream", size: 3*chunk + 100, calls: []string{"start", "open"}},
		{name: "the stream breaks mid-chunk", size: 3*chunk + 100, breakAt: chunk + 500,
			calls: []string{"start", "open", "query", "open"}, resumes: 1},
		{name: "the stream breaks at the finish", size: 3 * chunk, breakAt: 3*chunk - 1,
			calls: []string{"start", "open", "query", "open"}, resumes: 1},
		{name: "start refused", size: 2 * chunk, startErr: status.Error(codes.PermissionDenied, "no"),
			code: codes.PermissionDenied, calls: []string{"start"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &testAlloc{size: chunk}
			u := newTestRequest(a)
			tr := &fakeTransport{breakAt: tc.breakAt, startErr: tc.startErr}
			p, ev := testParams(u, tr, a)
			m := NewSession(p)
			data := payloadOf(tc.size)
			var err error
			off := 0
			for ; err == nil && len(data)-off > chunk; off += chunk {
				err = m.Push(a.chunk(data[off:off+chunk], int64(off)))
			}
			if err == nil {
				var o interface{ GetSize() int64 }
				o, err = m.Finish(a.chunk(data[off:], int64(off)))
				if err == nil && o.GetSize() != int64(len(data)) {
					t.Fatalf("object of %d bytes, want %d", o.GetSize(), len(data))
				}
			}
			if err != nil {
				m.Abort(err)
			}
			m.Close()
			if xfer.CodeOf(err) != tc.code {
				t.Fatalf("upload: %v, want code %v", err, tc.code)
			}
			sameCalls(t, tr.callsNow(), tc.calls)
			if tc.code == codes.OK {
				sameStored(t, tr, data)
			}
			if tr.misfed {
				t.Fatal("a stream was given chunks that do not go on from where it stood")
			}
			if n := ev.resumes.Load(); n != tc.resumes {
				t.Fatalf("%d resumes, want %d", n, tc.resumes)
			}
			u.Life.Wait()
			if n := a.out.Load(); n != 0 {
				t.Fatalf("%d buffers not given back", n)
			}
		})
	}
}

// TestModeInterfaces: the streaming modes take full chunks, and only an
// appendable object's flushes; a one-shot upload is a Mode only.
func TestModeInterfaces(t *testing.T) {
	var m Mode = OneShot{}
	if _, ok := m.(Streaming); ok {
		t.Fatal("a one-shot upload takes full chunks")
	}
	a := &testAlloc{size: 1 << 10}
	p, _ := testParams(newTestRequest(a), new(fakeTransport), a)
	p.Chunker = new(chunker.Chunker)
	if err := p.Chunker.Reset(256 << 10); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		m       Streaming
		flushes bool
	}{
		{"session", NewSession(p), false},
		{"appendable", NewAppend(p), true},
		{"parallel", NewParallel(p, Parallel{TempPrefix: "t/"}), false},
	} {
		if _, ok := tc.m.(Flusher); ok != tc.flushes {
			t.Errorf("%s: flushes %v, want %v", tc.name, ok, tc.flushes)
		}
		tc.m.Abort(nil)
	}
}
