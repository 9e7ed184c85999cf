package mode

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/googleapis/gax-go/v2"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/retry"
	"github.com/objup/objup/uploader/internal/xfer"
)

// The pieces a mode is given, made for its tests: a scripted transport
// (fakeTransport) and its stream, buffers that count what is out, events
// that count, services that run at once. A failure of a test here is the
// mode's: nothing below the seam runs.

// testRetry retries fast: four attempts, a millisecond apart.
var testRetry = retry.Config{Limits: retry.Limits{
	Backoff:        gax.Backoff{Initial: time.Millisecond, Max: time.Millisecond, Multiplier: 1},
	MaxAttempts:    4,
	Deadline:       10 * time.Second,
	AttemptTimeout: 5 * time.Second,
}}

// testAlloc gives buffers of size bytes and counts those out.
type testAlloc struct {
	size int
	out  atomic.Int64
}

func (a *testAlloc) Get(context.Context) (*[]byte, error) {
	a.out.Add(1)
	b := make([]byte, a.size)
	return &b, nil
}

func (a *testAlloc) Put(*[]byte) { a.out.Add(-1) }

func (a *testAlloc) BufferSize() int { return a.size }

// TryBuffer and WaitBuffer make a testAlloc a mode's Buffers.
func (a *testAlloc) TryBuffer() (*[]byte, bool) {
	b, _ := a.Get(context.Background())
	return b, true
}

func (a *testAlloc) WaitBuffer(ctx context.Context) (*[]byte, error) { return a.Get(ctx) }

// chunk returns data at offset off in a buffer of a, as the Writer's
// chunker seals it.
func (a *testAlloc) chunk(data []byte, off int64) chunker.Chunk {
	b, _ := a.Get(context.Background())
	n := copy(*b, data)
	return chunker.Chunk{Buf: b, Data: (*b)[:n], Offset: off, CRC32C: crc32c.Checksum(data)}
}

// testEvents counts what a mode reports.
type testEvents struct{ retries, resumes atomic.Int32 }

func (e *testEvents) Retried(string, error, time.Duration)    { e.retries.Add(1) }
func (e *testEvents) Forced(int)                              {}
func (e *testEvents) Redirected(string)                       {}
func (e *testEvents) Resumed(int64, error)                    { e.resumes.Add(1) }
func (e *testEvents) Waited(time.Duration)                    {}
func (e *testEvents) Span() trace.Span                        { return nil }
func (e *testEvents) Retries() int32                          { return e.retries.Load() }
func (e *testEvents) LogAttrs(extra ...slog.Attr) []slog.Attr { return extra }

// testServices runs background work at once.
type testServices struct{}

func (testServices) Background(f func()) { f() }

func (testServices) NewEvents(*xfer.Target, trace.Span) Events { return new(testEvents) }

// newTestRequest returns the request of an upload of gs://b/o whose
// chunks come from a.
func newTestRequest(a *testAlloc) *xfer.Request {
	u := &xfer.Request{Target: xfer.Target{Ctx: context.Background(), Bucket: "b", Object: "o", Params: "bucket=" + xfer.BucketPrefix + "b"}}
	u.Scratch.Spec.Resource = &u.Scratch.Object
	u.Life.Alloc = a
	return u
}

// testParams returns the params of an upload of u through tr.
func testParams(u *xfer.Request, tr xfer.Transport, a *testAlloc) (Params, *testEvents) {
	ev := new(testEvents)
	u.Life.Ev = ev
	e := new(retry.Engine)
	e.Init(&testRetry, ev)
	return Params{Request: u, Transport: tr, Engine: e, Events: ev,
		Window:  WindowBounds{Floor: 4 << 10, Start: 4 << 10, Limit: 4 << 10},
		Buffers: a, Services: testServices{}}, ev
}

// writeOutcome is one scripted answer of WriteObject.
type writeOutcome struct {
	sent bool
	err  error
}

// fakeTransport is a transport scripted by its test: WriteObject answers
// as writes says, attempt by attempt (past the script: stored); a
// resumable session stores what its streams send, and its stream breaks
// once when the service holds breakAt bytes (0: never); a start fails with
// startErr. It records its calls.
type fakeTransport struct {
	writes   []writeOutcome
	breakAt  int64
	startErr error

	mu        sync.Mutex
	calls     []string
	stored    []byte // what the session's service holds
	broke     bool
	finished  *wire.Object
	cancelled bool
	misfed    bool // a send was given a chunk that does not go on from where its stream stood
}

func (t *fakeTransport) record(call string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, c := range t.calls {
		if c == call {
			n++
		}
	}
	t.calls = append(t.calls, call)
	return n
}

func (t *fakeTransport) callsNow() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.calls...)
}

func (t *fakeTransport) WriteObject(u *xfer.Request, rs []*xfer.ChunkRef, _ time.Duration) (*wire.Object, bool, error) {
	n := t.record("write")
	if n < len(t.writes) && t.writes[n].err != nil {
		return nil, t.writes[n].sent, t.writes[n].err
	}
	var size int64
	for _, r := range rs {
		size += int64(len(r.Data))
	}
	return &wire.Object{Name: u.Object, Size: size, Generation: 1}, true, nil
}

func (t *fakeTransport) ComposeObject(*xfer.Request, []xfer.Source, time.Duration) (*wire.Object, error) {
	t.record("compose")
	return nil, status.Error(codes.Unimplemented, "compose")
}

func (t *fakeTransport) DeleteObject(*xfer.Request, string, int64, time.Duration) error {
	t.record("delete")
	return status.Error(codes.NotFound, "no object")
}

func (t *fakeTransport) GetObject(*xfer.Request, string, time.Duration) (*wire.Object, error) {
	t.record("get")
	return nil, status.Error(codes.NotFound, "no object")
}

func (t *fakeTransport) StartUpload(*xfer.Request, time.Duration) (string, error) {
	t.record("start")
	if t.startErr != nil {
		return "", t.startErr
	}
	return "session-1", nil
}

func (t *fakeTransport) QueryStatus(_ *xfer.Request, id string, _ xfer.Route, _ int64, _ time.Duration) (int64, *wire.Object, error) {
	t.record("query")
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.finished != nil {
		return t.finished.GetSize(), t.finished, nil
	}
	return int64(len(t.stored)), nil, nil
}

func (t *fakeTransport) OpenStream(_ *xfer.Request, _ string, _ xfer.Route, persisted int64, sink xfer.StreamSink, _ time.Duration) (xfer.Stream, error) {
	t.record("open")
	ctx, cancel := context.WithCancel(context.Background())
	return &fakeStream{t: t, sink: sink, sentTo: persisted, ctx: ctx, cancel: cancel}, nil
}

func (t *fakeTransport) OpenAppend(*xfer.Request, xfer.AppendOpen, time.Duration) (xfer.AppendStream, xfer.AppendOpened, error) {
	t.record("open-append")
	return nil, xfer.AppendOpened{}, status.Error(codes.Unimplemented, "appendable")
}

func (t *fakeTransport) CancelUpload(*xfer.Request, string, time.Duration) error {
	t.record("cancel")
	t.mu.Lock()
	t.cancelled = true
	t.mu.Unlock()
	return nil
}

func (t *fakeTransport) Window(perSend int64) int64 { return perSend }

func (t *fakeTransport) Names() *xfer.CallNames { return &testNames }

func (t *fakeTransport) Close() error { return nil }

var testNames = xfer.CallNames{Write: "write", Start: "start", Query: "query", Stream: "stream", Compose: "compose", Delete: "delete"}

// fakeStream is a session's stream of fakeTransport: each Send hands the
// service what its sink has unsent, and the service acknowledges it at
// once, on the Send's goroutine.
type fakeStream struct {
	t       *fakeTransport
	sink    xfer.StreamSink
	sentTo  int64
	want    xfer.Pushed
	finSent bool
	dead    bool
	ctx     context.Context
	cancel  context.CancelFunc
}

func (s *fakeStream) From() int64 { return s.sentTo }

func (s *fakeStream) Send(p xfer.Pushed, rs []*xfer.ChunkRef, all bool) error {
	s.want = p
	if s.dead {
		return status.Error(codes.Unavailable, "stream broken")
	}
	t := s.t
	for _, r := range rs {
		if r.Offset > s.sentTo || r.End() <= s.sentTo {
			s.t.mu.Lock()
			s.t.misfed = true
			s.t.mu.Unlock()
			continue
		}
		data := r.Data[s.sentTo-r.Offset:]
		t.mu.Lock()
		if t.breakAt > 0 && !t.broke && s.sentTo+int64(len(data)) > t.breakAt {
			// The service keeps what came before breakAt; the stream
			// breaks.
			t.broke = true
			t.stored = append(t.stored[:s.sentTo], data[:t.breakAt-s.sentTo]...)
			t.mu.Unlock()
			s.dead = true
			s.cancel()
			s.sink.Broke(status.Error(codes.Unavailable, "stream reset"))
			return nil
		}
		t.stored = append(t.stored[:s.sentTo], data...)
		t.mu.Unlock()
		s.sentTo += int64(len(data))
	}
	var o *wire.Object
	if p.Final && all && s.sentTo == p.Last {
		o = &wire.Object{Name: "o", Size: p.Last, Generation: 1}
		s.finSent = true
		t.mu.Lock()
		t.finished = o
		t.mu.Unlock()
	}
	if err := s.sink.Ack(s.sentTo, o, nil); err != nil {
		s.dead = true
		s.sink.Broke(err)
	}
	return nil
}

func (s *fakeStream) Idle() bool                 { return true }
func (s *fakeStream) Behind() bool               { return s.sentTo < s.want.Last || s.want.Final && !s.finSent }
func (s *fakeStream) Broken() context.Context    { return s.ctx }
func (s *fakeStream) Route() xfer.Route          { return 1 }
func (s *fakeStream) Done(context.Context)       {}
func (s *fakeStream) Teardown(cause error) error { s.cancel(); return cause }

// payloadOf returns n bytes of a pattern.
func payloadOf(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

// sameCalls fails t unless got are the calls want.
func sameCalls(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("calls %q, want %q", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("calls %q, want %q", got, want)
		}
	}
}

// sameStored fails t unless the service holds data.
func sameStored(t *testing.T, tr *fakeTransport, data []byte) {
	t.Helper()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if !bytes.Equal(tr.stored, data) {
		t.Fatalf("the service holds %d bytes, not the %d written", len(tr.stored), len(data))
	}
}
