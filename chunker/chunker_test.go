package chunker_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/pool"
)

const q = pool.Quantum

var boundarySizes = []struct {
	name string
	n    int
}{
	{"0", 0},
	{"1", 1},
	{"quantum-1", q - 1},
	{"quantum", q},
	{"quantum+1", q + 1},
	{"2quanta", 2 * q},
	{"3quanta+1", 3*q + 1},
}

// feeds are the ways a payload can reach a chunker.
var feeds = []struct {
	name string
	feed func(c *chunker.Chunker, p []byte) error
}{
	{"Write", func(c *chunker.Chunker, p []byte) error {
		_, err := c.Write(p)
		return err
	}},
	{"WriteString", func(c *chunker.Chunker, p []byte) error {
		_, err := c.WriteString(string(p))
		return err
	}},
	{"Write in odd pieces", func(c *chunker.Chunker, p []byte) error {
		return writeInPieces(c, p, []int{0, 1, 4095, 7, q - 3, 2*q + 5, 100_000})
	}},
	{"ReadFrom", func(c *chunker.Chunker, p []byte) error {
		return readAll(c, readerOnly{bytes.NewReader(p)}, len(p))
	}},
	{"ReadFrom WriterTo", func(c *chunker.Chunker, p []byte) error {
		return readAll(c, bytes.NewReader(p), len(p))
	}},
	{"ReadFrom strings.Reader", func(c *chunker.Chunker, p []byte) error {
		return readAll(c, strings.NewReader(string(p)), len(p))
	}},
	{"ReadFrom OneByteReader", func(c *chunker.Chunker, p []byte) error {
		return readAll(c, iotest.OneByteReader(bytes.NewReader(p)), len(p))
	}},
	{"ReadFrom HalfReader", func(c *chunker.Chunker, p []byte) error {
		return readAll(c, iotest.HalfReader(bytes.NewReader(p)), len(p))
	}},
	{"ReadFrom DataErrReader", func(c *chunker.Chunker, p []byte) error {
		return readAll(c, iotest.DataErrReader(bytes.NewReader(p)), len(p))
	}},
	{"ReadFrom pieces", func(c *chunker.Chunker, p []byte) error {
		return readAll(c, &pieceReader{p: p, lengths: []int{q - 1, 2, q, 3 * q}}, len(p))
	}},
	{"io.Copy", func(c *chunker.Chunker, p []byte) error {
		n, err := io.Copy(c, readerOnly{bytes.NewReader(p)})
		if err == nil && n != int64(len(p)) {
			err = errors.New("io.Copy short")
		}
		return err
	}},
}

func readAll(c *chunker.Chunker, r io.Reader, want int) error {
	n, err := c.ReadFrom(r)
	if err != nil {
		return err
	}
	if n != int64(want) {
		return errors.New("ReadFrom returned a wrong count")
	}
	return nil
}

// TestBoundaries runs every boundary size through every feed with an
// allocator that allows a single buffer out at a time: the chunker must never
// need a second buffer while its emitted chunk is put back synchronously.
func TestBoundaries(t *testing.T) {
	for _, sz := range boundarySizes {
		payload := pattern(sz.n, uint64(sz.n)+1)
		for _, f := range feeds {
			t.Run(sz.name+"/"+f.name, func(t *testing.T) {
				a := newTestAlloc(t, q, 1)
				withMD5 := sz.n%2 == 1
				var opts []chunker.Option
				if withMD5 {
					opts = append(opts, chunker.WithMD5())
				}
				r := chunk(t, a, func(c *chunker.Chunker) error { return f.feed(c, payload) }, opts...)
				check(t, payload, q, withMD5, r)
				if wantChunks := max(1, (sz.n+q-1)/q); len(r.emitted)+1 != wantChunks {
					t.Errorf("%d chunks, want %d", len(r.emitted)+1, wantChunks)
				}
			})
		}
	}
}

func TestRandomWriteSplits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 40 {
		size := 1 + rng.IntN(4096)
		if round%8 == 0 {
			size = q
		}
		n := rng.IntN(5*size + 2)
		payload := pattern(n, rng.Uint64())
		var lengths []int
		for range 1 + rng.IntN(10) {
			switch rng.IntN(3) {
			case 0:
				lengths = append(lengths, rng.IntN(8))
			case 1:
				lengths = append(lengths, rng.IntN(size+2))
			default:
				lengths = append(lengths, rng.IntN(3*size))
			}
		}
		a := newTestAlloc(t, size, 1)
		r := chunk(t, a, func(c *chunker.Chunker) error { return writeInPieces(c, payload, lengths) })
		check(t, payload, size, false, r)
		if t.Failed() {
			t.Fatalf("round %d: size %d, payload %d, lengths %v", round, size, n, lengths)
		}
	}
}

// TestLazyEmit checks that a full chunk is emitted only when the next byte
// arrives.
func TestLazyEmit(t *testing.T) {
	a := newTestAlloc(t, 8, 0)
	var emitted int
	c, err := chunker.New(context.Background(), a, func(ch chunker.Chunk) error {
		emitted++
		return a.Put(ch.Buf)
	})
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, c, "12345678")
	if emitted != 0 {
		t.Fatalf("a full chunk was emitted before the next byte: %d", emitted)
	}
	mustWrite(t, c, "")
	if emitted != 0 {
		t.Fatalf("an empty Write emitted a chunk")
	}
	mustWrite(t, c, "9")
	if emitted != 1 {
		t.Fatalf("emitted %d chunks after the 9th byte, want 1", emitted)
	}
	last, oneShot, err := c.Finish()
	if err != nil || oneShot || string(last.Data) != "9" || last.Offset != 8 {
		t.Fatalf("Finish = %q at %d, oneShot %v, %v", last.Data, last.Offset, oneShot, err)
	}
	_ = a.Put(last.Buf)
}

func TestReadFromExactChunkFetchesOnce(t *testing.T) {
	for _, f := range feeds {
		t.Run(f.name, func(t *testing.T) {
			a := newTestAlloc(t, q, 1)
			payload := pattern(q, 7)
			r := chunk(t, a, func(c *chunker.Chunker) error { return f.feed(c, payload) })
			check(t, payload, q, false, r)
			if !r.oneShot || len(r.emitted) != 0 || a.gets != 1 {
				t.Fatalf("oneShot %v, emitted %d, gets %d; want true, 0, 1", r.oneShot, len(r.emitted), a.gets)
			}
		})
	}
}

func mustWrite(t *testing.T, c *chunker.Chunker, s string) {
	t.Helper()
	if n, err := c.Write([]byte(s)); err != nil || n != len(s) {
		t.Fatalf("Write(%q) = %d, %v", s, n, err)
	}
}

func TestReaderErrorsKeepTheStream(t *testing.T) {
	errRead := errors.New("read failed")
	a := newTestAlloc(t, 1000, 1)
	head, tail := pattern(2500, 1), pattern(700, 2)
	r := chunk(t, a, func(c *chunker.Chunker) error {
		n, err := c.ReadFrom(iotest.ErrReader(errRead))
		if n != 0 || !errors.Is(err, errRead) {
			t.Errorf("ReadFrom(ErrReader) = %d, %v", n, err)
		}
		n, err = c.ReadFrom(io.MultiReader(bytes.NewReader(head), iotest.ErrReader(errRead)))
		if n != int64(len(head)) || !errors.Is(err, errRead) {
			t.Errorf("ReadFrom(data then error) = %d, %v", n, err)
		}
		// TimeoutReader fails its second read only; a later ReadFrom
		// picks up where it stopped.
		tr := iotest.TimeoutReader(iotest.HalfReader(bytes.NewReader(tail)))
		n1, err := c.ReadFrom(tr)
		if !errors.Is(err, iotest.ErrTimeout) {
			t.Errorf("ReadFrom(TimeoutReader) = %d, %v", n1, err)
		}
		n2, err := c.ReadFrom(tr)
		if err != nil || n1+n2 != int64(len(tail)) {
			t.Errorf("ReadFrom after timeout = %d+%d, %v", n1, n2, err)
		}
		return nil
	})
	check(t, append(head, tail...), 1000, false, r)
}

// TestReaderErrorOnFullChunk fails the read that probes past a full chunk.
func TestReaderErrorOnFullChunk(t *testing.T) {
	errRead := errors.New("read failed")
	a := newTestAlloc(t, 16, 1)
	payload := pattern(16, 3)
	r := chunk(t, a, func(c *chunker.Chunker) error {
		n, err := c.ReadFrom(io.MultiReader(bytes.NewReader(payload), iotest.ErrReader(errRead)))
		if n != 16 || !errors.Is(err, errRead) {
			t.Errorf("ReadFrom = %d, %v", n, err)
		}
		return nil
	})
	check(t, payload, 16, false, r)
}

type badReader struct{ n int }

func (r badReader) Read(p []byte) (int, error) { return r.n, nil }

func TestBadReaders(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    io.Reader
		want error
	}{
		{"negative count", badReader{-1}, nil},
		{"count beyond buffer", badReader{1 << 30}, nil},
		{"no progress", badReader{0}, io.ErrNoProgress},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestAlloc(t, 64, 1)
			c, err := chunker.New(context.Background(), a, collector(t, a, &result{}))
			if err != nil {
				t.Fatal(err)
			}
			n, err := c.ReadFrom(tc.r)
			if err == nil || n != 0 || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("ReadFrom = %d, %v", n, err)
			}
			// A reader's fault does not break the chunker.
			mustWrite(t, c, "ok")
			last, _, err := c.Finish()
			if err != nil || string(last.Data) != "ok" {
				t.Fatalf("Finish = %q, %v", last.Data, err)
			}
			_ = a.Put(last.Buf)
		})
	}
	t.Run("nil reader", func(t *testing.T) {
		a := newTestAlloc(t, 64, 1)
		c, _ := chunker.New(context.Background(), a, collector(t, a, &result{}))
		if _, err := c.ReadFrom(nil); err == nil {
			t.Fatal("ReadFrom(nil) succeeded")
		}
		c.Abort()
	})
	t.Run("probe count beyond 1", func(t *testing.T) {
		a := newTestAlloc(t, 4, 1)
		c, _ := chunker.New(context.Background(), a, collector(t, a, &result{}))
		mustWrite(t, c, "full")
		if n, err := c.ReadFrom(badReader{2}); err == nil || n != 0 {
			t.Fatalf("ReadFrom = %d, %v", n, err)
		}
		c.Abort()
	})
}

func TestEmitErrorBreaksTheChunker(t *testing.T) {
	errEmit := errors.New("emit failed")
	a := newTestAlloc(t, 10, 1)
	c, err := chunker.New(context.Background(), a, func(ch chunker.Chunk) error {
		_ = a.Put(ch.Buf) // the receiver owns the chunk even when failing
		return errEmit
	})
	if err != nil {
		t.Fatal(err)
	}
	n, err := c.Write(pattern(25, 1))
	if n != 10 || !errors.Is(err, errEmit) {
		t.Fatalf("Write = %d, %v; want 10, errEmit", n, err)
	}
	if n, err := c.Write([]byte("x")); n != 0 || !errors.Is(err, errEmit) {
		t.Errorf("Write after emit error = %d, %v", n, err)
	}
	if n, err := c.ReadFrom(strings.NewReader("x")); n != 0 || !errors.Is(err, errEmit) {
		t.Errorf("ReadFrom after emit error = %d, %v", n, err)
	}
	if _, _, err := c.Finish(); !errors.Is(err, errEmit) {
		t.Errorf("Finish after emit error = %v", err)
	}
	c.Abort()
	c.Abort()
	if a.outstanding() != 0 {
		t.Errorf("%d buffers out after Abort", a.outstanding())
	}
}

func TestEmitErrorFromReadFrom(t *testing.T) {
	errEmit := errors.New("emit failed")
	a := newTestAlloc(t, 10, 1)
	c, _ := chunker.New(context.Background(), a, func(ch chunker.Chunk) error {
		_ = a.Put(ch.Buf)
		return errEmit
	})
	n, err := c.ReadFrom(readerOnly{bytes.NewReader(pattern(25, 1))})
	if n != 10 || !errors.Is(err, errEmit) {
		t.Fatalf("ReadFrom = %d, %v; want 10, errEmit", n, err)
	}
	c.Abort()
}

func TestAllocatorErrors(t *testing.T) {
	errGet := errors.New("no buffer today")
	put := func(*[]byte) error { return nil }
	for _, tc := range []struct {
		name string
		a    pool.Allocator
		is   error
	}{
		{"Get error", funcAlloc{get: func(context.Context) (*[]byte, error) { return nil, errGet }, put: put, size: 8}, errGet},
		{"nil buffer", funcAlloc{get: func(context.Context) (*[]byte, error) { return nil, nil }, put: put, size: 8}, nil},
		{"short buffer", funcAlloc{get: func(context.Context) (*[]byte, error) {
			b := make([]byte, 7)
			return &b, nil
		}, put: put, size: 8}, nil},
		{"long buffer", funcAlloc{get: func(context.Context) (*[]byte, error) {
			b := make([]byte, 9)
			return &b, nil
		}, put: put, size: 8}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := chunker.New(context.Background(), tc.a, func(chunker.Chunk) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			n, err := c.Write([]byte("x"))
			if n != 0 || err == nil || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("Write = %d, %v", n, err)
			}
			t.Log(err)
			if _, err2 := c.ReadFrom(strings.NewReader("y")); !errors.Is(err2, err) {
				t.Errorf("ReadFrom after allocator error = %v, want %v", err2, err)
			}
			if _, _, err2 := c.Finish(); !errors.Is(err2, err) {
				t.Errorf("Finish after allocator error = %v, want %v", err2, err)
			}
			c.Abort()
		})
	}
	t.Run("wrong-length buffer goes back", func(t *testing.T) {
		var put int
		a := funcAlloc{
			get:  func(context.Context) (*[]byte, error) { b := make([]byte, 3); return &b, nil },
			put:  func(*[]byte) error { put++; return nil },
			size: 8,
		}
		c, _ := chunker.New(context.Background(), a, func(chunker.Chunk) error { return nil })
		if _, err := c.Write([]byte("x")); err == nil || put != 1 {
			t.Fatalf("Write err %v, %d Puts; want an error and 1 Put", err, put)
		}
	})
}

// TestBudgetBlocksAndCancels feeds a chunker from a pool with a budget of one
// buffer while emit keeps the chunks: the next Get must block until ctx is
// cancelled, and Write must then return ctx.Err().
func TestBudgetBlocksAndCancels(t *testing.T) {
	p, err := pool.New(pool.WithBudget(q))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var kept []*[]byte
	c, err := chunker.New(ctx, p, func(ch chunker.Chunk) error {
		kept = append(kept, ch.Buf) // not put back: the budget is spent
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, c, strings.Repeat("a", q))

	type res struct {
		n   int
		err error
	}
	done := make(chan res, 1)
	go func() {
		n, err := c.Write([]byte("b"))
		done <- res{n, err}
	}()
	for i := 0; p.Stats().BudgetWaits == 0; i++ {
		if i > 20000 {
			t.Fatal("Write never waited for the budget")
		}
		runtime.Gosched()
		time.Sleep(100 * time.Microsecond)
	}
	select {
	case r := <-done:
		t.Fatalf("Write returned %d, %v beyond the budget", r.n, r.err)
	default:
	}
	cancel()
	r := <-done
	if r.n != 0 || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("Write = %d, %v; want 0, context.Canceled", r.n, r.err)
	}
	if len(kept) != 1 {
		t.Fatalf("emitted %d chunks, want 1", len(kept))
	}
	for _, b := range kept {
		if err := p.Put(b); err != nil {
			t.Fatal(err)
		}
	}
	c.Abort()
	if st := p.Stats(); st.InUseBytes != 0 || st.Gets != st.Puts {
		t.Fatalf("pool Stats after Abort = %+v", st)
	}
}

func TestNewErrors(t *testing.T) {
	ok := newTestAlloc(t, 8, 0)
	emit := func(chunker.Chunk) error { return nil }
	sized := func(n int) pool.Allocator { return funcAlloc{size: n} }
	for _, tc := range []struct {
		name string
		ctx  context.Context
		a    pool.Allocator
		emit func(chunker.Chunk) error
	}{
		{"nil context", nil, ok, emit},
		{"nil allocator", context.Background(), nil, emit},
		{"nil emit", context.Background(), ok, nil},
		{"zero buffer size", context.Background(), sized(0), emit},
		{"negative buffer size", context.Background(), sized(-1), emit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := chunker.New(tc.ctx, tc.a, tc.emit)
			if err == nil || c != nil {
				t.Fatalf("New = %v, %v; want an error", c, err)
			}
			t.Log(err)
		})
	}
}

func TestFinishAndAbortLifecycle(t *testing.T) {
	a := newTestAlloc(t, 8, 1)
	c, _ := chunker.New(context.Background(), a, collector(t, a, &result{}), chunker.WithMD5())
	if c.ChunkSize() != 8 {
		t.Fatalf("ChunkSize = %d", c.ChunkSize())
	}
	mustWrite(t, c, "abc")
	if c.Size() != 3 || c.MD5() != nil {
		t.Fatalf("before Finish: Size %d, MD5 %x", c.Size(), c.MD5())
	}
	last, oneShot, err := c.Finish()
	if err != nil || !oneShot || string(last.Data) != "abc" {
		t.Fatalf("Finish = %q, %v, %v", last.Data, oneShot, err)
	}
	c.Abort() // after Finish: nothing held, nothing changes
	if _, err := c.Write([]byte("d")); err == nil {
		t.Error("Write after Finish succeeded")
	}
	if _, err := c.ReadFrom(strings.NewReader("d")); err == nil {
		t.Error("ReadFrom after Finish succeeded")
	}
	if _, _, err := c.Finish(); err == nil {
		t.Error("second Finish succeeded")
	}
	if c.Size() != 3 || c.CRC32C() != crc32c([]byte("abc")) || len(c.MD5()) != 16 {
		t.Errorf("after Finish: Size %d CRC32C %08x MD5 %x", c.Size(), c.CRC32C(), c.MD5())
	}
	m := c.MD5()
	m[0] ^= 0xFF
	if bytes.Equal(m, c.MD5()) {
		t.Error("MD5 returned the Chunker's own slice")
	}
	_ = a.Put(last.Buf)

	// Abort while holding a buffer puts it back and breaks the chunker.
	c2, _ := chunker.New(context.Background(), a, collector(t, a, &result{}))
	mustWrite(t, c2, "abc")
	if a.outstanding() != 1 {
		t.Fatalf("%d buffers out while writing", a.outstanding())
	}
	c2.Abort()
	c2.Abort()
	if a.outstanding() != 0 {
		t.Fatalf("%d buffers out after Abort", a.outstanding())
	}
	if _, err := c2.Write([]byte("d")); err == nil {
		t.Error("Write after Abort succeeded")
	}
	if _, _, err := c2.Finish(); err == nil {
		t.Error("Finish after Abort succeeded")
	}
}

func TestEmptyReadFromPutsItsBufferBack(t *testing.T) {
	a := newTestAlloc(t, 8, 1)
	r := chunk(t, a, func(c *chunker.Chunker) error {
		_, err := c.ReadFrom(readerOnly{strings.NewReader("")})
		return err
	})
	check(t, nil, 8, false, r)
	if a.gets != 1 {
		t.Fatalf("gets = %d", a.gets)
	}
}

func TestZeroChunker(t *testing.T) {
	var c chunker.Chunker
	if _, err := c.Write([]byte("x")); err == nil {
		t.Error("Write on a zero Chunker succeeded")
	}
	if _, err := c.ReadFrom(strings.NewReader("x")); err == nil {
		t.Error("ReadFrom on a zero Chunker succeeded")
	}
	if _, _, err := c.Finish(); err == nil {
		t.Error("Finish on a zero Chunker succeeded")
	}
	c.Abort()
}

// TestCallerBuffer runs the chunker on pool.Fixed, as the uploader does with a
// caller's own buffer.
func TestCallerBuffer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		bufLen  int
		payload int
	}{
		{"small buffer, object fits", 1000, 1000},
		{"small buffer, empty object", 1000, 0},
		{"small buffer, object too big", 1000, 2500},
		{"one quantum, exact object", q, q},
		{"two quanta, many chunks", 2*q + 17, 5*q + 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buf := make([]byte, tc.bufLen)
			f, err := pool.NewFixed(buf)
			if err != nil {
				t.Fatal(err)
			}
			payload := pattern(tc.payload, 9)
			for _, fd := range feeds {
				// A Fixed blocks when all slots are out; wrap it so a
				// chunker that needs one slot too many fails instead.
				a := &slotGuard{Fixed: f, free: f.Slots()}
				r := chunk(t, a, func(c *chunker.Chunker) error { return fd.feed(c, payload) })
				check(t, payload, f.BufferSize(), false, r)
				if t.Failed() {
					t.Fatalf("feed %s", fd.name)
				}
				if a.free != f.Slots() {
					t.Fatalf("feed %s: %d of %d slots free at the end", fd.name, a.free, f.Slots())
				}
			}
		})
	}
}

// slotGuard fails a Get that would block on its Fixed. It is used from one
// goroutine only.
type slotGuard struct {
	*pool.Fixed
	free int
}

func (g *slotGuard) Get(ctx context.Context) (*[]byte, error) {
	if g.free == 0 {
		return nil, errExhausted
	}
	b, err := g.Fixed.Get(ctx)
	if err == nil {
		g.free--
	}
	return b, err
}

func (g *slotGuard) Put(b *[]byte) error {
	err := g.Fixed.Put(b)
	if err == nil {
		g.free++
	}
	return err
}

// TestAllocations checks that a chunker allocates only itself, however many
// chunks it cuts: the buffers come from the allocator (here a Fixed, which
// never allocates).
func TestAllocations(t *testing.T) {
	f, err := pool.NewFixed(make([]byte, q))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	emit := func(ch chunker.Chunk) error { return f.Put(ch.Buf) }
	for _, n := range []int{0, 1024, 3*q + 1} {
		payload := pattern(n, 1)
		allocs := testing.AllocsPerRun(20, func() {
			c, err := chunker.New(ctx, f, emit)
			if err != nil {
				panic(err)
			}
			if _, err := c.Write(payload); err != nil {
				panic(err)
			}
			last, _, err := c.Finish()
			if err != nil {
				panic(err)
			}
			if last.Buf != nil {
				if err := f.Put(last.Buf); err != nil {
					panic(err)
				}
			}
		})
		if allocs > 1 {
			t.Errorf("%d-byte object: %.0f allocations, want 1 (the Chunker)", n, allocs)
		}
	}
}
