package mode

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/xfer"
)

// The parallel modes on their own, against fakeGCS: what the service
// holds once the upload ended, which calls went out in which order, and
// the code of a failure.

// testCheckpoints keeps a mode's checkpoint.
type testCheckpoints struct {
	mu sync.Mutex
	c  xfer.Checkpoint
}

func (k *testCheckpoints) Update(f func(*xfer.Checkpoint), _ bool) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	f(&k.c)
	return nil
}

// last returns a copy of the checkpoint.
func (k *testCheckpoints) last() xfer.Checkpoint {
	k.mu.Lock()
	defer k.mu.Unlock()
	c := k.c
	c.Parts = append([]xfer.StoredPart(nil), c.Parts...)
	return c
}

// parallelRun is what a parallel upload left: what Finish returned (or
// the failure of a Push or a Buffer), the upload's last checkpoint, the
// last progress reported and the buffers not given back.
type parallelRun struct {
	o        *wire.Object
	err      error
	cp       xfer.Checkpoint
	progress int64
	out      int64
}

// runParallel uploads data with the parallel mode of cfg against g, in
// chunks of chunk bytes, as the Writer does (see writeAll); after a
// failure it aborts the mode; then it closes the mode and waits for the
// buffers. setup, if not nil, adjusts the params first (the upload's
// context, its spec, its buffers).
func runParallel(t *testing.T, g *fakeGCS, chunk int, cfg Parallel, data []byte, setup func(*Params)) parallelRun {
	t.Helper()
	a := &testAlloc{size: chunk}
	u := newTestRequest(a)
	p, _ := testParams(u, g, a)
	p.Chunker = new(chunker.Chunker)
	if err := p.Chunker.Reset(chunk); err != nil {
		t.Fatal(err)
	}
	cps := new(testCheckpoints)
	p.Checkpoints = cps
	var progress atomic.Int64
	progress.Store(-1)
	p.Progress = NewProgress(func(n int64) { progress.Store(n) })
	if setup != nil {
		setup(&p)
	}
	m := NewParallel(p, cfg)
	o, err := writeAll(m, p.Chunker, data)
	if err != nil {
		m.Abort(err)
	}
	u.Life.PutBuffer(p.Chunker.Abort())
	m.Close()
	u.Life.Wait()
	return parallelRun{o: o, err: err, cp: cps.last(), progress: progress.Load(), out: a.out.Load()}
}

// writeAll writes data through m as the Writer does: a buffer from the
// mode for each chunk, each full chunk pushed once more bytes come, the
// last chunk (full or not) to Finish.
func writeAll(m Streaming, ch *chunker.Chunker, data []byte) (*wire.Object, error) {
	for len(data) > 0 {
		if ch.Full() {
			if err := m.Push(ch.Seal()); err != nil {
				return nil, err
			}
		}
		if !ch.Holding() {
			b, err := m.Buffer()
			if err != nil {
				return nil, err
			}
			ch.Attach(b)
		}
		data = data[ch.Write(data):]
	}
	last, _ := ch.Finish()
	return m.Finish(last)
}

// scripted returns a fault that answers the calls named "op name" in
// answers: the call's n-th time gets answers[...][n] (the last one
// again past the end); other calls go through.
func scripted(answers map[string][]answer) func(fakeCall) (bool, error) {
	return func(c fakeCall) (bool, error) {
		as := answers[c.op+" "+c.name]
		if len(as) == 0 {
			return false, nil
		}
		a := as[min(c.n, len(as)-1)]
		return a.applied, a.err
	}
}

// answer is a scripted answer: err (nil: the call goes through), after
// the service applied the call when applied is set.
type answer struct {
	applied bool
	err     error
}

var (
	ansThrough = answer{}
	errReset   = status.Error(codes.Unavailable, "connection reset")
	ansLost    = answer{applied: true, err: errReset} // done, and the answer lost
	ansDropped = answer{err: errReset}                // lost on the way: never done
)

// ansRefused is the service's refusal with code c.
func ansRefused(c codes.Code) answer { return answer{err: status.Error(c, "scripted "+c.String())} }

// tempObjects returns the objects of g under the upload's prefix "t/".
func tempObjects(g *fakeGCS) []string {
	var out []string
	for _, n := range g.objectNames() {
		if strings.HasPrefix(n, "t/") {
			out = append(out, n)
		}
	}
	return out
}

// callIndex returns the position of call in calls, or -1.
func callIndex(calls []string, call string) int {
	for i, c := range calls {
		if c == call {
			return i
		}
	}
	return -1
}

// TestParallelCompose: a composite upload's parts become temporary
// objects through sessions of their own, which compose rounds of at most
// 32 sources join in order into the object; the probe of the delete
// permission goes out first, and once the object is made the cleanup
// deletes every temporary object (the parts and the intermediate
// composes), each once. Transient failures of a part are retried within
// the part.
func TestParallelCompose(t *testing.T) {
	const chunk = 1 << 10
	for _, tc := range []struct {
		name     string
		partSize int64
		size     int
		exact    bool // Parallel.Exact, with a live object of the name
		answers  map[string][]answer
		composes int      // composes that go out
		temps    int      // temporary objects made: parts and intermediates
		calls    []string // calls that must go out, beside the usual
	}{
		{name: "three parts", partSize: 2 * chunk, size: 5*chunk + 100, composes: 1, temps: 3},
		{name: "one part", partSize: 4 * chunk, size: 3*chunk + 1, composes: 1, temps: 1},
		{name: "a part on a chunk boundary", partSize: 2 * chunk, size: 4 * chunk, composes: 1, temps: 2},
		{name: "two rounds of composes", partSize: chunk, size: 33*chunk + 1, composes: 2 + 1, temps: 34 + 2},
		{name: "three rounds of composes", partSize: chunk, size: 32*32*chunk + 1, composes: 33 + 2 + 1, temps: 1025 + 33 + 2},
		{name: "exact: the compose replaces the live generation only", partSize: 2 * chunk, size: 5 * chunk, exact: true,
			composes: 1, temps: 3, calls: []string{"get o"}},
		{name: "a part's session refused once for load", partSize: 2 * chunk, size: 5 * chunk, composes: 1, temps: 3,
			answers: map[string][]answer{"start t/id/part-1": {ansRefused(codes.ResourceExhausted), ansThrough}},
			calls:   []string{"start t/id/part-1", "start t/id/part-1"}},
		{name: "a part's finish answer lost: its session's status finds the part", partSize: 2 * chunk, size: 5 * chunk, composes: 1, temps: 3,
			answers: map[string][]answer{"finish t/id/part-1": {ansLost, ansThrough}},
			calls:   []string{"query t/id/part-1"}},
		{name: "a part's stream breaks at the finish: resumed on a new stream", partSize: 2 * chunk, size: 5 * chunk, composes: 1, temps: 3,
			answers: map[string][]answer{"finish t/id/part-1": {ansDropped, ansThrough}},
			calls:   []string{"query t/id/part-1", "open t/id/part-1", "open t/id/part-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newFakeGCS()
			g.fault = scripted(tc.answers)
			var liveGen int64
			if tc.exact {
				liveGen = g.put("o", []byte("an older generation"))
			}
			data := payloadOf(tc.size)
			r := runParallel(t, g, chunk, Parallel{PartSize: tc.partSize, TempPrefix: "t/", ID: "id", Exact: tc.exact}, data, nil)
			if r.err != nil {
				t.Fatalf("upload: %v", r.err)
			}
			stored := g.object("o")
			switch {
			case stored == nil || !bytes.Equal(stored.data, data):
				t.Fatal("the object does not hold the bytes written")
			case r.o.GetSize() != int64(len(data)) || r.o.GetGeneration() != stored.gen:
				t.Fatalf("Finish returned %v; want the stored generation %d of %d bytes", r.o, stored.gen, len(data))
			}
			calls := g.callsOf()
			if calls[0] != "delete t/id/probe" {
				t.Fatalf("the first call is %q, not the probe of the delete permission", calls[0])
			}
			g.mu.Lock()
			composes := g.composes
			g.mu.Unlock()
			if len(composes) != tc.composes || composes[len(composes)-1].name != "o" {
				t.Fatalf("composes %+v; want %d, the last of o", composes, tc.composes)
			}
			if tc.exact {
				if m := composes[len(composes)-1].match; m == nil || *m != liveGen {
					t.Fatalf("the compose's ifGenerationMatch is %v, want the live generation %d", m, liveGen)
				}
			}
			if left := tempObjects(g); len(left) > 0 {
				t.Fatalf("temporary objects left: %q", left)
			}
			final := callIndex(calls, "compose o")
			deletes := 0
			for i, c := range calls {
				if strings.HasPrefix(c, "delete t/id/") && c != "delete t/id/probe" {
					deletes++
					if i < final {
						t.Fatalf("%s went out before the object was composed", c)
					}
				}
			}
			if deletes != tc.temps {
				t.Fatalf("%d deletes of temporary objects, want %d", deletes, tc.temps)
			}
			for _, c := range tc.calls {
				if n, want := g.count(c), countIn(tc.calls, c); n != want {
					t.Fatalf("%q went out %d times, want %d (calls %q)", c, n, want, calls)
				}
			}
			if g.misfed {
				t.Fatal("a stream was handed chunks that do not go on from where it stood")
			}
			if r.progress != int64(len(data)) {
				t.Fatalf("progress reported %d bytes, want %d", r.progress, len(data))
			}
			if r.out != 0 {
				t.Fatalf("%d buffers not given back", r.out)
			}
			cp := r.cp
			if cp.Gen != stored.gen || !cp.Composing || cp.Prefix != "t/" || cp.ID != "id" {
				t.Fatalf("checkpoint %+v: want the object's generation %d, composing, prefix t/ and id", cp, stored.gen)
			}
			for _, p := range cp.Parts {
				if p.Gen == 0 {
					t.Fatalf("checkpoint: part %d noted without its generation", p.Index)
				}
			}
		})
	}
}

// countIn returns how many times s is in list.
func countIn(list []string, s string) int {
	n := 0
	for _, c := range list {
		if c == s {
			n++
		}
	}
	return n
}

// TestParallelComposeFails: a composite upload that fails fails with the
// code of the failure (a part's, the probe's, the compose's), composes
// nothing once a part failed, and leaves no temporary object once closed;
// a compose whose answer was lost leaves the outcome unknown.
func TestParallelComposeFails(t *testing.T) {
	const chunk = 1 << 10
	ifNew := func(p *Params) { p.Request.Scratch.Spec.IfGenerationMatch = new(int64) }
	for _, tc := range []struct {
		name     string
		answers  map[string][]answer
		badCRC   string
		setup    func(*Params)
		code     codes.Code
		unknown  bool
		composes int
		starts   int // sessions begun; -1: any
	}{
		{name: "the credential may not delete: no part goes out",
			answers: map[string][]answer{"delete t/id/probe": {ansRefused(codes.PermissionDenied)}},
			code:    codes.PermissionDenied},
		{name: "a part's session refused",
			answers: map[string][]answer{"start t/id/part-1": {ansRefused(codes.PermissionDenied)}},
			code:    codes.PermissionDenied, starts: -1},
		{name: "a part's finish refused", answers: map[string][]answer{"finish t/id/part-1": {ansRefused(codes.PermissionDenied)}},
			code: codes.PermissionDenied, starts: -1},
		{name: "a part stored with another CRC32C", badCRC: "t/id/part-1", code: codes.DataLoss, starts: -1},
		{name: "a part's session refused for load every time",
			answers: map[string][]answer{"start t/id/part-2": {ansRefused(codes.ResourceExhausted)}},
			code:    codes.ResourceExhausted, starts: -1},
		{name: "the compose refused", answers: map[string][]answer{"compose o": {ansRefused(codes.PermissionDenied)}},
			code: codes.PermissionDenied, composes: 1, starts: 3},
		{name: "the compose's answer lost: not repeated without a precondition",
			answers: map[string][]answer{"compose o": {ansLost}},
			code:    codes.Unavailable, unknown: true, composes: 1, starts: 3},
		{name: "the compose's answer lost, then its precondition fails",
			answers: map[string][]answer{"compose o": {ansLost, ansThrough}}, setup: ifNew,
			code: codes.FailedPrecondition, unknown: true, composes: 2, starts: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newFakeGCS()
			g.fault = scripted(tc.answers)
			g.badCRC = tc.badCRC
			r := runParallel(t, g, chunk, Parallel{PartSize: 2 * chunk, TempPrefix: "t/", ID: "id"}, payloadOf(5*chunk+1), tc.setup)
			if xfer.CodeOf(r.err) != tc.code || xfer.Unknown(r.err) != tc.unknown {
				t.Fatalf("upload: %v (unknown %v); want code %v, unknown %v", r.err, xfer.Unknown(r.err), tc.code, tc.unknown)
			}
			if r.o != nil {
				t.Fatalf("a failed upload returned the object %v", r.o)
			}
			if composes := len(g.callsOf("compose")); composes != tc.composes {
				t.Fatalf("%d composes went out, want %d", composes, tc.composes)
			}
			if starts := len(g.callsOf("start")); tc.starts >= 0 && starts != tc.starts {
				t.Fatalf("%d sessions begun, want %d", starts, tc.starts)
			}
			if left := tempObjects(g); len(left) > 0 {
				t.Fatalf("temporary objects left: %q", left)
			}
			if !tc.unknown && g.object("o") != nil {
				t.Fatal("the upload failed, and the object was stored")
			}
			if r.out != 0 {
				t.Fatalf("%d buffers not given back", r.out)
			}
		})
	}
}

// TestParallelComposeCancel: the upload's context ends while a part's
// finish awaits its answer: the upload fails with Canceled, composes
// nothing, cancels that part's session (nothing of it can be stored
// later) and deletes the parts stored.
func TestParallelComposeCancel(t *testing.T) {
	const chunk = 1 << 10
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := newFakeGCS()
	g.fault = func(c fakeCall) (bool, error) {
		if c.op == "finish" && c.name == "t/id/part-1" {
			cancel()
			return false, errHold
		}
		return false, nil
	}
	r := runParallel(t, g, chunk, Parallel{PartSize: 2 * chunk, TempPrefix: "t/", ID: "id"}, payloadOf(7*chunk),
		func(p *Params) { p.Request.Ctx = ctx })
	if xfer.CodeOf(r.err) != codes.Canceled {
		t.Fatalf("upload: %v, want code Canceled", r.err)
	}
	if n := len(g.callsOf("compose")); n != 0 {
		t.Fatalf("%d composes went out", n)
	}
	if names := g.objectNames(); len(names) != 0 {
		t.Fatalf("objects left: %q", names)
	}
	held := g.sessionsOf("t/id/part-1")
	if len(held) != 1 || !held[0].cancelled {
		t.Fatalf("the sessions of the part in flight: %+v; want it cancelled", held)
	}
	if r.out != 0 {
		t.Fatalf("%d buffers not given back", r.out)
	}
}
