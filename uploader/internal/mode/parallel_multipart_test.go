package mode

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader/internal/xfer"
)

// mpChunk is the chunk size of the multipart tests: a part is 5 chunks.
const mpChunk = 1 << 20

// mpPayload returns n bytes of a pattern whose period (a prime) no part
// size divides, so that parts differ: made by copies, fast under the race
// detector.
func mpPayload(n int) []byte {
	const period = 4099
	return bytes.Repeat(payloadOf(period), n/period+1)[:n]
}

// mpPartsOf returns the parts data makes in a multipart upload of 5 MiB
// parts, as the service must be told of them at the complete: numbered
// from 1, with the ETags fakeGCS gives (the CRC32C of the part's bytes
// and its number).
func mpPartsOf(data []byte) []xfer.MultipartPart {
	var parts []xfer.MultipartPart
	for i := 0; len(data) > 0; i++ {
		n := min(len(data), MinMultipartPart)
		parts = append(parts, xfer.MultipartPart{Number: i + 1, ETag: fmt.Sprintf("\"%08x-%d\"", crc32c.Checksum(data[:n]), i+1)})
		data = data[n:]
	}
	return parts
}

// samePartList reports whether the parts listed are want, numbers and ETags.
func samePartList(got, want []xfer.MultipartPart) bool {
	return slices.EqualFunc(got, want, func(a, b xfer.MultipartPart) bool { return a.Number == b.Number && a.ETag == b.ETag })
}

// TestParallelMultipart: a multipart upload initiates once, before any
// part; each part goes out in one call with its CRC32C (the service
// refuses a wrong one) and is retried alone; the complete lists the
// parts ascending with their ETags, whatever order they ended in; a
// complete's lost answer is settled by the next attempt (NotFound: the
// lost one completed) or by an abort; the empty upload a lost initiate
// began is swept; nothing is aborted once the object is made.
func TestParallelMultipart(t *testing.T) {
	// A part that waits for part 3 to reach the service ends last.
	lastEndsFirst := func() func(fakeCall) (bool, error) {
		third := make(chan struct{})
		return func(c fakeCall) (bool, error) {
			switch {
			case c.op == "part" && c.name == "3" && c.n == 0:
				close(third)
			case c.op == "part" && c.name == "1":
				select {
				case <-third:
				case <-c.ctx.Done():
				case <-time.After(10 * time.Second):
					// Not a timing: a guard, should part 3 never come.
					return false, status.Error(codes.Internal, "part 3 never reached the service")
				}
			}
			return false, nil
		}
	}
	for _, tc := range []struct {
		name     string
		size     int
		fault    func() func(fakeCall) (bool, error)
		answers  map[string][]answer
		id       string   // the upload completed
		calls    []string // calls that must go out, beside the usual
		aborts   []string // the uploads aborted
		swept    bool     // the uploads of the object were listed
		complete int      // completes that went out
	}{
		{name: "three parts, the first ending last", size: 2*MinMultipartPart + 1000, fault: lastEndsFirst, complete: 1},
		{name: "one part under 5 MiB", size: 3 * mpChunk, complete: 1},
		{name: "parts on chunk boundaries", size: 2 * MinMultipartPart, complete: 1},
		{name: "a part refused once for load", size: MinMultipartPart + 1, complete: 1,
			answers: map[string][]answer{"part 2": {ansRefused(codes.ResourceExhausted), ansThrough}},
			calls:   []string{"part 2", "part 2"}},
		{name: "a part's answer lost: sent again", size: MinMultipartPart + 1, complete: 1,
			answers: map[string][]answer{"part 1": {ansLost, ansThrough}},
			calls:   []string{"part 1", "part 1"}},
		{name: "the initiate's answer lost: the upload it began is swept", size: MinMultipartPart + 1, complete: 1,
			answers: map[string][]answer{"initiate o": {ansLost, ansThrough}},
			id:      "upload-2", calls: []string{"listparts upload-1"}, aborts: []string{"abort upload-1"}, swept: true},
		{name: "the complete's answer lost, then NotFound: the lost one completed", size: MinMultipartPart + 1, complete: 2,
			answers: map[string][]answer{"complete upload-1": {ansLost, ansThrough}},
			calls:   []string{"get o"}},
		{name: "the complete's answers lost, the abort finds it gone: completed", size: MinMultipartPart + 1, complete: 4,
			answers: map[string][]answer{"complete upload-1": {ansLost, ansDropped}},
			calls:   []string{"get o"}, aborts: []string{"abort upload-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newFakeGCS()
			g.fault = scripted(tc.answers)
			if tc.fault != nil {
				g.fault = tc.fault()
			}
			id := tc.id
			if id == "" {
				id = "upload-1"
			}
			data := mpPayload(tc.size)
			r := runParallel(t, g, mpChunk, Parallel{XML: g, PartSize: MinMultipartPart}, data, nil)
			if r.err != nil {
				t.Fatalf("upload: %v", r.err)
			}
			stored := g.object("o")
			crc := crc32c.Checksum(data)
			switch {
			case stored == nil || !bytes.Equal(stored.data, data):
				t.Fatal("the object does not hold the bytes written")
			case r.o.GetSize() != int64(len(data)) || r.o.GetGeneration() != stored.gen || r.o.GetChecksums().GetCrc32C() != crc:
				t.Fatalf("Finish returned %v; want the stored generation %d, %d bytes, CRC32C %08x", r.o, stored.gen, len(data), crc)
			}
			calls := g.callsOf()
			if calls[0] != "initiate o" {
				t.Fatalf("the first call is %q, not the initiate", calls[0])
			}
			if n := g.count("complete " + id); n != tc.complete {
				t.Fatalf("%d completes of %s, want %d (calls %q)", n, id, tc.complete, calls)
			}
			g.mu.Lock()
			listed := g.completes[len(g.completes)-1]
			g.mu.Unlock()
			if want := mpPartsOf(data); !samePartList(listed, want) {
				t.Fatalf("the complete listed %v, want %v", listed, want)
			}
			for _, c := range tc.calls {
				if n, want := g.count(c), countIn(tc.calls, c); n != want {
					t.Fatalf("%q went out %d times, want %d (calls %q)", c, n, want, calls)
				}
			}
			if aborts := g.callsOf("abort"); !slices.Equal(aborts, tc.aborts) {
				t.Fatalf("aborts %q, want %q", aborts, tc.aborts)
			}
			if swept := len(g.callsOf("listuploads")) > 0; swept != tc.swept {
				t.Fatalf("the uploads were listed: %v, want %v", swept, tc.swept)
			}
			if open := g.openUploads(); len(open) > 0 {
				t.Fatalf("uploads left open: %q", open)
			}
			if g.misfed {
				t.Fatal("a part was handed chunks that do not go on from each other")
			}
			if r.progress != int64(len(data)) {
				t.Fatalf("progress reported %d bytes, want %d", r.progress, len(data))
			}
			if r.out != 0 {
				t.Fatalf("%d buffers not given back", r.out)
			}
			cp := r.cp
			if cp.UploadID != id || cp.Gen != stored.gen || !cp.Composing || len(cp.Parts) != len(mpPartsOf(data)) {
				t.Fatalf("checkpoint %+v: want upload %s, the object's generation %d and its parts", cp, id, stored.gen)
			}
			for _, p := range cp.Parts {
				if p.ETag == "" {
					t.Fatalf("checkpoint: part %d noted without its ETag", p.Index)
				}
			}
		})
	}
}

// TestParallelMultipartFails: a multipart upload that fails fails with
// the code of the failure, stores nothing and leaves no upload open: the
// upload is aborted (once: not again after an abort settled a complete),
// and the empty uploads lost initiates began are swept; the outcome is
// unknown only when neither the complete nor the abort could tell.
func TestParallelMultipartFails(t *testing.T) {
	for _, tc := range []struct {
		name     string
		size     int
		answers  map[string][]answer
		code     codes.Code
		unknown  bool
		parts    bool // parts went out
		complete bool // a complete went out
		aborts   int  // aborts of upload-1; -1: any
		open     []string
	}{
		{name: "the initiate refused", size: 3 * mpChunk,
			answers: map[string][]answer{"initiate o": {ansRefused(codes.PermissionDenied)}},
			code:    codes.PermissionDenied},
		{name: "the initiate's answers lost every time: the uploads they began are swept", size: 3 * mpChunk,
			answers: map[string][]answer{"initiate o": {ansLost}},
			code:    codes.Unavailable, aborts: 1},
		{name: "a part refused", size: 2*MinMultipartPart + 1,
			answers: map[string][]answer{"part 2": {ansRefused(codes.PermissionDenied)}},
			code:    codes.PermissionDenied, parts: true, aborts: 1},
		{name: "a part's digest refused", size: 2*MinMultipartPart + 1,
			answers: map[string][]answer{"part 2": {ansRefused(codes.DataLoss)}},
			code:    codes.DataLoss, parts: true, aborts: 1},
		{name: "a part refused for load every time", size: MinMultipartPart + 1,
			answers: map[string][]answer{"part 1": {ansRefused(codes.ResourceExhausted)}},
			code:    codes.ResourceExhausted, parts: true, aborts: 1},
		{name: "the complete refused", size: MinMultipartPart + 1,
			answers: map[string][]answer{"complete upload-1": {ansRefused(codes.InvalidArgument)}},
			code:    codes.InvalidArgument, parts: true, complete: true, aborts: 1},
		{name: "the complete's answers lost, the abort done: nothing stored", size: MinMultipartPart + 1,
			answers: map[string][]answer{"complete upload-1": {ansDropped}},
			code:    codes.Unavailable, parts: true, complete: true, aborts: 1},
		{name: "the complete's and the abort's answers lost: unknown", size: MinMultipartPart + 1,
			answers: map[string][]answer{"complete upload-1": {ansDropped}, "abort upload-1": {ansDropped}},
			code:    codes.Unavailable, unknown: true, parts: true, complete: true, aborts: -1, open: []string{"upload-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newFakeGCS()
			g.fault = scripted(tc.answers)
			r := runParallel(t, g, mpChunk, Parallel{XML: g, PartSize: MinMultipartPart}, mpPayload(tc.size), nil)
			if xfer.CodeOf(r.err) != tc.code || xfer.Unknown(r.err) != tc.unknown {
				t.Fatalf("upload: %v (unknown %v); want code %v, unknown %v", r.err, xfer.Unknown(r.err), tc.code, tc.unknown)
			}
			if r.o != nil {
				t.Fatalf("a failed upload returned the object %v", r.o)
			}
			if g.object("o") != nil {
				t.Fatal("the upload failed, and the object was stored")
			}
			calls := g.callsOf()
			if parts := len(g.callsOf("part")) > 0; parts != tc.parts {
				t.Fatalf("parts went out: %v, want %v (calls %q)", parts, tc.parts, calls)
			}
			if complete := len(g.callsOf("complete")) > 0; complete != tc.complete {
				t.Fatalf("a complete went out: %v, want %v (calls %q)", complete, tc.complete, calls)
			}
			if n := g.count("abort upload-1"); tc.aborts >= 0 && n != tc.aborts {
				t.Fatalf("upload-1 aborted %d times, want %d (calls %q)", n, tc.aborts, calls)
			}
			if open := g.openUploads(); !slices.Equal(open, tc.open) {
				t.Fatalf("uploads left open %q, want %q", open, tc.open)
			}
			if r.out != 0 {
				t.Fatalf("%d buffers not given back", r.out)
			}
		})
	}
}

// TestParallelMultipartCancel: the upload's context ends while a part is
// on its way: the upload fails with Canceled, completes nothing, and the
// upload is aborted with the cleanup's own time.
func TestParallelMultipartCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := newFakeGCS()
	g.fault = func(c fakeCall) (bool, error) {
		if c.op == "part" && c.name == "2" {
			cancel()
			<-c.ctx.Done()
			// How the HTTP client reports an attempt its context ended.
			return false, status.Error(codes.DeadlineExceeded, c.ctx.Err().Error())
		}
		return false, nil
	}
	r := runParallel(t, g, mpChunk, Parallel{XML: g, PartSize: MinMultipartPart}, mpPayload(2*MinMultipartPart+1), func(p *Params) { p.Request.Ctx = ctx })
	if xfer.CodeOf(r.err) != codes.Canceled {
		t.Fatalf("upload: %v, want code Canceled", r.err)
	}
	if n := len(g.callsOf("complete")); n != 0 {
		t.Fatalf("%d completes went out", n)
	}
	if g.count("abort upload-1") != 1 || len(g.openUploads()) != 0 || g.object("o") != nil {
		t.Fatalf("calls %q, uploads open %q: want the upload aborted, nothing stored", g.callsOf(), g.openUploads())
	}
	if r.out != 0 {
		t.Fatalf("%d buffers not given back", r.out)
	}
}

// poolBuffers are buffers from a pool, as the Writer's are; a wait
// for one is told to waiting, if not nil.
type poolBuffers struct {
	p       *pool.Pool
	waiting chan struct{}
}

func (b *poolBuffers) TryBuffer() (*[]byte, bool) { return b.p.TryGet() }

func (b *poolBuffers) WaitBuffer(ctx context.Context) (*[]byte, error) {
	if b.waiting != nil {
		select {
		case b.waiting <- struct{}{}:
		default:
		}
	}
	return b.p.Get(ctx)
}

// scarceBuffers never have a buffer free at once; a wait gets one.
type scarceBuffers struct{ a *testAlloc }

func (b scarceBuffers) TryBuffer() (*[]byte, bool) { return nil, false }

func (b scarceBuffers) WaitBuffer(ctx context.Context) (*[]byte, error) { return b.a.Get(ctx) }

// TestMultipartStarve: a multipart upload whose part, under 5 MiB, cannot
// go out while it waits for a buffer, with none of its parts in flight:
// it waits while something else holds the pool's buffers, and gets one
// once given back; it fails with ResourceExhausted when it holds all the
// pool hands out, or at once when its buffers are not a pool's.
func TestMultipartStarve(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget int64 // the pool's; 0: buffers not from a pool
		other  bool  // another upload holds a buffer, given back once the upload waits
		code   codes.Code
	}{
		{name: "another upload gives a buffer back", budget: 3 * mpChunk, other: true},
		{name: "the upload holds all the pool hands out", budget: 2 * mpChunk, code: codes.ResourceExhausted},
		{name: "buffers not from a pool", code: codes.ResourceExhausted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newFakeGCS()
			data := mpPayload(3 * mpChunk)
			// A guard, not a timing: a wait that never ends fails the
			// upload with DeadlineExceeded instead of hanging the test.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var pl *pool.Pool
			done := make(chan struct{})
			var back chan struct{}
			setup := func(p *Params) {
				p.Request.Ctx = ctx
				p.Buffers = scarceBuffers{p.Request.Life.Alloc.(*testAlloc)}
			}
			if tc.budget > 0 {
				var err error
				if pl, err = pool.New(pool.WithBufferSize(mpChunk), pool.WithBudget(tc.budget)); err != nil {
					t.Fatal(err)
				}
				pb := &poolBuffers{p: pl, waiting: make(chan struct{}, 1)}
				setup = func(p *Params) {
					p.Request.Ctx = ctx
					p.Request.Life.Alloc = pl
					p.Buffers = pb
				}
				if tc.other {
					held, _ := pl.TryGet()
					back = make(chan struct{})
					go func() {
						defer close(back)
						select {
						case <-pb.waiting:
						case <-done:
						}
						pl.Put(held)
					}()
				}
			}
			r := runParallel(t, g, mpChunk, Parallel{XML: g, PartSize: MinMultipartPart}, data, setup)
			close(done)
			if back != nil {
				<-back
			}
			if xfer.CodeOf(r.err) != tc.code {
				t.Fatalf("upload: %v, want code %v", r.err, tc.code)
			}
			stored := g.object("o")
			if tc.code == codes.OK && (stored == nil || !bytes.Equal(stored.data, data)) {
				t.Fatal("the object does not hold the bytes written")
			}
			if tc.code != codes.OK && (stored != nil || len(g.callsOf("part")) != 0) {
				t.Fatalf("calls %q: a part under 5 MiB went out", g.callsOf())
			}
			if pl != nil {
				if n := pl.Stats().InUseBytes; n != 0 {
					t.Fatalf("%d bytes of the pool not given back", n)
				}
			} else if r.out != 0 {
				t.Fatalf("%d buffers not given back", r.out)
			}
		})
	}
}
