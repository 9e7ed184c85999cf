package chunker_test

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/objup/objup/chunker"
	crccount "github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/pool"
)

const q = pool.Quantum

// feed is one way for an owner to get a payload into its Chunker.
type feed struct {
	name   string
	maxLen int // longest payload worth the time (0: any)
	run    func(o *owner, p []byte)
}

// fillFrom returns a feed function that fills the whole payload from the
// reader that wrap makes of it.
func fillFrom(wrap func(io.Reader) io.Reader) func(o *owner, p []byte) {
	return func(o *owner, p []byte) {
		o.t.Helper()
		n, err := o.fill(wrap(bytes.NewReader(p)))
		if err != nil || n != int64(len(p)) {
			o.t.Fatalf("fill = %d, %v; want %d, nil", n, err, len(p))
		}
	}
}

var (
	feedWrite = feed{"Write", 0, func(o *owner, p []byte) { o.write(p) }}
	feedFill  = feed{"Fill", 0, fillFrom(func(r io.Reader) io.Reader { return r })}
)

var feeds = []feed{
	feedWrite,
	{"Write in odd pieces", 0, func(o *owner, p []byte) {
		o.writeSplit(p, []int{0, 1, 4095, 7, q - 3, 2*q + 5, 100_000, 3 << 20})
	}},
	feedFill,
	{"Fill OneByteReader", 1 << 20, fillFrom(iotest.OneByteReader)},
	{"Fill HalfReader", 0, fillFrom(iotest.HalfReader)},
	{"Fill DataErrReader", 0, fillFrom(iotest.DataErrReader)},
	{"Fill in odd reads with errors", 0, func(o *owner, p []byte) {
		r := &pieceReader{p: p, lengths: []int{q - 1, 2, 0, q, 3 * q, 1, 0, 0}}
		if n := o.fillRetrying(r); n != int64(len(p)) {
			o.t.Fatalf("fill = %d, want %d", n, len(p))
		}
	}},
	{"Write then Fill", 0, func(o *owner, p []byte) {
		h := len(p) / 2
		o.write(p[:h])
		feedFill.run(o, p[h:])
	}},
	{"Fill then Write", 0, func(o *owner, p []byte) {
		h := len(p) / 2
		feedFill.run(o, p[:h])
		o.write(p[h:])
	}},
}

var payloads sync.Map // int -> []byte

// payload returns the n-byte test payload, made once.
func payload(n int) []byte {
	if p, ok := payloads.Load(n); ok {
		return p.([]byte)
	}
	p, _ := payloads.LoadOrStore(n, pattern(n, uint64(n)+1))
	return p.([]byte)
}

// boundaryLengths returns the object sizes around the chunk boundaries of
// size: 0, 1, size-1, size, size+1, 2*size, 2*size+1, without repeats.
func boundaryLengths(size int) []int {
	n := []int{0, 1, size - 1, size, size + 1, 2 * size, 2*size + 1}
	slices.Sort(n)
	return slices.Compact(n)
}

// TestBoundaries runs every object size around the chunk boundaries through
// every feed, for chunk sizes of one byte, a few bytes, one quantum and
// several 2 MiB pieces (5 MiB: pieces of 2, 2 and 1 MiB).
func TestBoundaries(t *testing.T) {
	for _, size := range []int{1, 7, q, 5 << 20} {
		for _, n := range boundaryLengths(size) {
			p := payload(n)
			for i, f := range feeds {
				if f.maxLen > 0 && n > f.maxLen {
					continue
				}
				withMD5 := (i+n)%2 == 0
				t.Run(sizeName(size)+"/"+sizeName(n)+"/"+f.name, func(t *testing.T) {
					var opts []chunker.Option
					if withMD5 {
						opts = append(opts, chunker.WithMD5())
					}
					o := newOwner(t, size, opts...)
					f.run(o, p)
					check(t, p, size, withMD5, o.finish())
				})
			}
		}
	}
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) <= 1:
		return strconv.Itoa(n>>20) + "MiB" + plus(n%(1<<20))
	case n >= 1<<10 && n%(1<<10) <= 1:
		return strconv.Itoa(n>>10) + "KiB" + plus(n%(1<<10))
	case n >= 1<<20 && (n+1)%(1<<20) == 0:
		return strconv.Itoa((n+1)>>20) + "MiB-1"
	case n >= 1<<10 && (n+1)%(1<<10) == 0:
		return strconv.Itoa((n+1)>>10) + "KiB-1"
	}
	return strconv.Itoa(n)
}

func plus(r int) string {
	if r == 0 {
		return ""
	}
	return "+" + strconv.Itoa(r)
}

// TestPieces checks the per-piece CRC-32Cs of single chunks around MaxPiece.
func TestPieces(t *testing.T) {
	const m = chunker.MaxPiece
	for _, tc := range []struct {
		n          int
		wantPieces int // 0: Pieces is nil
	}{
		{0, 0},
		{1, 0},
		{m - 1, 0},
		{m, 0},
		{m + 1, 2},
		{2 * m, 2},
		{2*m + 1, 3},
		{5 << 20, 3},
		{3 * m, 3},
	} {
		t.Run(sizeName(tc.n), func(t *testing.T) {
			p := payload(tc.n)
			o := newOwner(t, max(tc.n, 1))
			o.c.Attach(o.bufs.get())
			if k := o.c.Write(p); k != tc.n {
				t.Fatalf("Write = %d, want %d", k, tc.n)
			}
			last, oneShot := o.c.Finish()
			if !oneShot || len(last.Data) != tc.n {
				t.Fatalf("Finish: %d bytes, oneShot %v", len(last.Data), oneShot)
			}
			if len(last.Pieces) != tc.wantPieces {
				t.Errorf("%d Pieces, want %d", len(last.Pieces), tc.wantPieces)
			}
			checkChunk(t, o.c.ChunkSize(), last)
			if got, want := o.c.CRC32C(), crc32c(p); got != want {
				t.Errorf("object CRC32C %08x, want %08x", got, want)
			}
			o.bufs.put(last.Buf)
		})
	}
}

// TestChecksumsEachByteOnce counts the bytes that pass through the CRC-32C:
// each payload byte exactly once, pieces and the object's checksum included.
func TestChecksumsEachByteOnce(t *testing.T) {
	for _, tc := range []struct {
		size, n int
	}{
		{q, 3*q + 1},
		{5 << 20, 11<<20 + 3},
		{7, 100},
	} {
		for _, f := range []feed{feedWrite, feedFill} {
			t.Run(sizeName(tc.size)+"/"+sizeName(tc.n)+"/"+f.name, func(t *testing.T) {
				p := payload(tc.n)
				o := newOwner(t, tc.size)
				stop := crccount.Counting()
				f.run(o, p)
				r := o.finish()
				if got := stop(); got != int64(tc.n) {
					t.Errorf("%d bytes checksummed for a %d-byte object", got, tc.n)
				}
				check(t, p, tc.size, false, r)
			})
		}
	}
}

// TestStates walks one Chunker through every state and checks what it
// reports after each step.
func TestStates(t *testing.T) {
	b := newBufs(t, 4)
	c, err := newChunker(4)
	if err != nil {
		t.Fatal(err)
	}
	r := strings.NewReader("efg")
	var sealed, last chunker.Chunk
	var oneShot bool
	steps := []struct {
		name                 string
		do                   func(t *testing.T)
		holding, needs, full bool
		size                 int64
	}{
		{"new", func(*testing.T) {}, false, true, false, 0},
		{"Write without a buffer takes nothing", func(t *testing.T) { wantInt(t, "Write", c.Write([]byte("x")), 0) }, false, true, false, 0},
		{"Attach", func(*testing.T) { c.Attach(b.get()) }, true, false, false, 0},
		{"Write fills the buffer", func(t *testing.T) { wantInt(t, "Write", c.Write([]byte("abcdXYZ")), 4) }, true, false, true, 4},
		{"Write into a full buffer takes nothing", func(t *testing.T) { wantInt(t, "Write", c.Write([]byte("x")), 0) }, true, false, true, 4},
		{"Fill at the end of a reader keeps the full chunk", func(t *testing.T) {
			n, err := c.Fill(strings.NewReader(""))
			wantInt(t, "Fill", n, 0)
			wantErr(t, err, io.EOF)
		}, true, false, true, 4},
		{"Fill reads one byte past the full chunk", func(t *testing.T) {
			n, err := c.Fill(r)
			wantInt(t, "Fill", n, 1)
			wantErr(t, err, nil)
		}, true, true, true, 5},
		{"Write with a byte waiting takes nothing", func(t *testing.T) { wantInt(t, "Write", c.Write([]byte("x")), 0) }, true, true, true, 5},
		{"Seal", func(*testing.T) { sealed = c.Seal() }, false, true, false, 5},
		{"Attach puts the waiting byte first", func(*testing.T) { c.Attach(b.get()) }, true, false, false, 5},
		{"Fill to the end", func(t *testing.T) {
			n, err := c.Fill(r)
			wantInt(t, "Fill", n, 2)
			wantErr(t, err, io.EOF)
		}, true, false, false, 7},
		{"Finish", func(*testing.T) { last, oneShot = c.Finish() }, false, true, false, 7},
	}
	for _, s := range steps {
		s.do(t)
		if c.Holding() != s.holding || c.NeedsBuffer() != s.needs || c.Full() != s.full || c.Size() != s.size {
			t.Fatalf("after %q: Holding %v NeedsBuffer %v Full %v Size %d; want %v %v %v %d", s.name,
				c.Holding(), c.NeedsBuffer(), c.Full(), c.Size(), s.holding, s.needs, s.full, s.size)
		}
	}
	if string(sealed.Data) != "abcd" || sealed.Offset != 0 || string(last.Data) != "efg" || last.Offset != 4 || oneShot {
		t.Fatalf("chunks %q at %d and %q at %d, oneShot %v", sealed.Data, sealed.Offset, last.Data, last.Offset, oneShot)
	}
	if got, want := c.CRC32C(), crc32c([]byte("abcdefg")); got != want {
		t.Fatalf("CRC32C %08x, want %08x", got, want)
	}
	b.put(sealed.Buf)
	b.put(last.Buf)
}

func wantInt(t *testing.T, what string, got, want int) {
	t.Helper()
	if got != want {
		t.Fatalf("%s = %d, want %d", what, got, want)
	}
}

func wantErr(t *testing.T, got, want error) {
	t.Helper()
	if !errors.Is(got, want) || (want == nil && got != nil) {
		t.Fatalf("error %v, want %v", got, want)
	}
}

// lastReadErr returns its data and errRead in the same read, then errRead.
type lastReadErr struct{ p []byte }

var errRead = errors.New("read failed")

func (r *lastReadErr) Read(b []byte) (int, error) {
	n := copy(b, r.p)
	r.p = r.p[n:]
	if len(r.p) == 0 {
		return n, errRead
	}
	return n, nil
}

// TestFillReaderErrors checks that an error of the reader is returned as it
// is, with the bytes read before it kept, and that the Chunker then goes on
// with the rest of the stream.
func TestFillReaderErrors(t *testing.T) {
	head, tail := payload(2500), pattern(700, 7)
	all := append(bytes.Clone(head), tail...)
	for _, tc := range []struct {
		name string
		size int
		// setup returns the reader that fails and the one that gives the
		// rest of the object (the same one if it goes on after its error)
		setup func() (first, rest io.Reader)
		want  []byte // the object
		n     int    // bytes read before the error
		err   error
		full  bool // after the error, the held buffer is full and no byte waits
	}{
		{"ErrReader", 1000, func() (io.Reader, io.Reader) {
			return iotest.ErrReader(errRead), bytes.NewReader(tail)
		}, tail, 0, errRead, false},
		{"data then ErrReader", 1000, func() (io.Reader, io.Reader) {
			return io.MultiReader(bytes.NewReader(head), iotest.ErrReader(errRead)), bytes.NewReader(tail)
		}, all, len(head), errRead, false},
		{"data and error in one read", 1000, func() (io.Reader, io.Reader) {
			return &lastReadErr{head}, bytes.NewReader(tail)
		}, all, len(head), errRead, false},
		{"error on the read past a full chunk", 500, func() (io.Reader, io.Reader) {
			return io.MultiReader(bytes.NewReader(head), iotest.ErrReader(errRead)), bytes.NewReader(tail)
		}, all, len(head), errRead, true},
		{"TimeoutReader, then the same reader", 1000, func() (io.Reader, io.Reader) {
			// The first read takes half of the 1000-byte buffer, the
			// second times out, the next ones go on.
			r := iotest.TimeoutReader(iotest.HalfReader(bytes.NewReader(head)))
			return r, r
		}, head, 500, iotest.ErrTimeout, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first, rest := tc.setup()
			o := newOwner(t, tc.size, chunker.WithMD5())
			n, err := o.fill(first)
			if n != int64(tc.n) || !errors.Is(err, tc.err) {
				t.Fatalf("fill = %d, %v; want %d, %v", n, err, tc.n, tc.err)
			}
			if o.c.Size() != n {
				t.Fatalf("Size = %d after %d bytes", o.c.Size(), n)
			}
			if tc.full && (!o.c.Full() || o.c.NeedsBuffer()) {
				t.Fatalf("after an error on the read past a full chunk: Full %v NeedsBuffer %v", o.c.Full(), o.c.NeedsBuffer())
			}
			m, err := o.fill(rest)
			if err != nil || n+m != int64(len(tc.want)) {
				t.Fatalf("fill after the error = %d, %v; want %d bytes in all", m, err, len(tc.want))
			}
			check(t, tc.want, tc.size, true, o.finish())
		})
	}
}

// TestBadReaders checks that a reader breaking the io.Reader contract gives
// an error from Fill, that nothing it claims is taken, and that the Chunker
// stays usable.
func TestBadReaders(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n       int  // what the reader returns on every read
		fullBuf bool // the buffer is full, so Fill reads one byte past it
		err     error
		calls   int // reads Fill makes (0: not checked)
	}{
		{"negative count", -1, false, nil, 1},
		{"count beyond the buffer", 1 << 30, false, nil, 1},
		{"negative count past a full chunk", -1, true, nil, 1},
		{"count beyond one byte past a full chunk", 2, true, nil, 1},
		{"no data and no error forever", 0, false, io.ErrNoProgress, 100},
		{"no data and no error forever past a full chunk", 0, true, io.ErrNoProgress, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const size = 64
			o := newOwner(t, size)
			var want []byte
			o.c.Attach(o.bufs.get())
			if tc.fullBuf {
				want = pattern(size, 1)
				o.write(want)
			}
			r := &badReader{n: tc.n}
			n, err := o.c.Fill(r)
			if err == nil || n != 0 || (tc.err != nil && !errors.Is(err, tc.err)) {
				t.Fatalf("Fill = %d, %v; want 0 and an error (%v)", n, err, tc.err)
			}
			if tc.calls > 0 && r.calls != tc.calls {
				t.Errorf("Fill read %d times, want %d", r.calls, tc.calls)
			}
			if o.c.Size() != int64(len(want)) || o.c.NeedsBuffer() {
				t.Fatalf("after the bad reader: Size %d, NeedsBuffer %v", o.c.Size(), o.c.NeedsBuffer())
			}
			o.write([]byte("ok"))
			want = append(want, "ok"...)
			check(t, want, size, false, o.finish())
		})
	}
}

// TestMisusePanics checks that each programming error of an owner panics
// with a message that names the package, and that the Chunker is left as it
// was.
func TestMisusePanics(t *testing.T) {
	type env struct {
		c *chunker.Chunker
		b *bufs
	}
	const size = 4
	attach := func(e *env) { e.c.Attach(e.b.get()) }
	finish := func(e *env) {
		last, _ := e.c.Finish()
		if last.Buf != nil {
			e.b.put(last.Buf)
		}
	}
	abort := func(e *env) {
		if b := e.c.Abort(); b != nil {
			e.b.put(b)
		}
	}
	pending := func(e *env) { // a full chunk and a byte read past it
		attach(e)
		e.c.Write([]byte("abcd"))
		if n, err := e.c.Fill(strings.NewReader("ef")); n != 1 || err != nil {
			panic("setup: Fill did not read past the chunk")
		}
	}
	stranger := func(n int) *[]byte { b := make([]byte, n); return &b }
	for _, tc := range []struct {
		name   string
		setup  func(e *env)
		misuse func(e *env)
		want   string
	}{
		{"Attach while holding", attach, func(e *env) { e.c.Attach(stranger(size)) }, "while a buffer is held"},
		{"Attach of nil", func(*env) {}, func(e *env) { e.c.Attach(nil) }, "not 4 bytes"},
		{"Attach of a short buffer", func(*env) {}, func(e *env) { e.c.Attach(stranger(size - 1)) }, "not 4 bytes"},
		{"Attach of a long buffer", func(*env) {}, func(e *env) { e.c.Attach(stranger(size + 1)) }, "not 4 bytes"},
		{"Attach after Finish", finish, func(e *env) { e.c.Attach(stranger(size)) }, "after Finish"},
		{"Attach after Abort", func(e *env) { attach(e); abort(e) }, func(e *env) { e.c.Attach(stranger(size)) }, "Abort"},
		{"Fill without a buffer", func(*env) {}, func(e *env) { e.c.Fill(strings.NewReader("x")) }, "Fill"},
		{"Fill after Finish", finish, func(e *env) { e.c.Fill(strings.NewReader("x")) }, "Fill"},
		{"Fill with a byte waiting", pending, func(e *env) { e.c.Fill(strings.NewReader("x")) }, "Fill"},
		{"Seal without a buffer", func(*env) {}, func(e *env) { e.c.Seal() }, "Seal without a buffer"},
		{"Seal after Finish", func(e *env) { attach(e); finish(e) }, func(e *env) { e.c.Seal() }, "Seal without a buffer"},
		{"Finish twice", finish, func(e *env) { e.c.Finish() }, "Finish after Finish"},
		{"Finish after Abort", abort, func(e *env) { e.c.Finish() }, "Abort"},
		{"Finish with a byte waiting", pending, func(e *env) { e.c.Finish() }, "byte waiting"},
		{"Reset while holding", attach, func(e *env) { e.c.Reset(size) }, "Reset while a buffer is held"},
		{"PieceCRC32C beyond a one-piece chunk", func(*env) {}, func(e *env) {
			ch := chunker.Chunk{CRC32C: 1}
			ch.PieceCRC32C(1)
		}, "piece 1 of a one-piece chunk"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := newChunker(size)
			if err != nil {
				t.Fatal(err)
			}
			e := &env{c, newBufs(t, size)}
			defer abort(e)
			tc.setup(e)
			holding, needs, full, n := c.Holding(), c.NeedsBuffer(), c.Full(), c.Size()
			msg := panicMessage(func() { tc.misuse(e) })
			if !strings.HasPrefix(msg, "chunker: ") || !strings.Contains(msg, tc.want) {
				t.Fatalf("panic %q, want a chunker panic about %q", msg, tc.want)
			}
			if c.Holding() != holding || c.NeedsBuffer() != needs || c.Full() != full || c.Size() != n {
				t.Fatalf("the panic changed the Chunker: Holding %v NeedsBuffer %v Full %v Size %d, was %v %v %v %d",
					c.Holding(), c.NeedsBuffer(), c.Full(), c.Size(), holding, needs, full, n)
			}
		})
	}
}

// panicMessage runs f and returns the string it panicked with, or "" if it
// did not panic.
func panicMessage(f func()) (msg string) {
	defer func() {
		switch v := recover().(type) {
		case nil:
		case string:
			msg = v
		case error:
			msg = v.Error()
		default:
			msg = "unexpected panic value"
		}
	}()
	f()
	return ""
}

// TestFinishWithAByteWaitingCanGoOn checks that after the panic of Finish on
// a byte read past a full chunk, the owner can still Seal, Attach and Finish.
func TestFinishWithAByteWaitingCanGoOn(t *testing.T) {
	o := newOwner(t, 4)
	o.write([]byte("abcd"))
	if n, err := o.c.Fill(strings.NewReader("e")); n != 1 || err != nil {
		t.Fatalf("Fill = %d, %v", n, err)
	}
	if msg := panicMessage(func() { o.c.Finish() }); msg == "" {
		t.Fatal("Finish with a byte waiting did not panic")
	}
	check(t, []byte("abcde"), 4, false, o.finish())
}

// TestAbort checks that Abort hands back the buffer held, whatever the
// state, and ends the Chunker.
func TestAbort(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(o *owner)
		held  bool
	}{
		{"nothing attached", func(*owner) {}, false},
		{"empty buffer", func(o *owner) { o.c.Attach(o.bufs.get()) }, true},
		{"partial buffer", func(o *owner) { o.write([]byte("ab")) }, true},
		{"full buffer", func(o *owner) { o.write([]byte("abcd")) }, true},
		{"full buffer and a byte waiting", func(o *owner) {
			o.write([]byte("abcd"))
			o.c.Fill(strings.NewReader("e"))
		}, true},
		{"after Seal", func(o *owner) { o.write([]byte("abcd")); o.bufs.put(o.c.Seal().Buf) }, false},
		{"after Finish", func(o *owner) { o.write([]byte("ab")); o.finish() }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOwner(t, 4)
			tc.setup(o)
			var held *[]byte
			for b := range o.bufs.out {
				held = b
			}
			b := o.c.Abort()
			if tc.held && (b == nil || b != held) {
				t.Fatalf("Abort = %p, want the held buffer %p", b, held)
			}
			if !tc.held && b != nil {
				t.Fatalf("Abort = %p, want nil", b)
			}
			if b != nil {
				o.bufs.put(b)
			}
			if o.c.Holding() {
				t.Fatal("Holding after Abort")
			}
			if b := o.c.Abort(); b != nil {
				t.Fatal("a second Abort handed back a buffer")
			}
		})
	}
}

// TestReset checks that a Chunker can be reused through Reset, with other
// options and another size, after Finish or Abort, and from its zero value.
func TestReset(t *testing.T) {
	var c chunker.Chunker
	for i, tc := range []struct {
		size    int
		opts    []chunker.Option
		withMD5 bool
		n       int
		abort   bool // abort half way, then Reset and run again
	}{
		{8, []chunker.Option{chunker.WithMD5()}, true, 20, false},
		{16, nil, false, 16, false},
		{3, []chunker.Option{nil, chunker.WithMD5()}, true, 10, true},
		{q, nil, false, q + 1, false},
		{1, nil, false, 0, false},
	} {
		if err := c.Reset(tc.size, tc.opts...); err != nil {
			t.Fatalf("run %d: Reset(%d): %v", i, tc.size, err)
		}
		if c.ChunkSize() != tc.size || c.Size() != 0 || c.Holding() || c.MD5() != nil {
			t.Fatalf("run %d: after Reset: ChunkSize %d Size %d Holding %v MD5 %x", i, c.ChunkSize(), c.Size(), c.Holding(), c.MD5())
		}
		p := pattern(tc.n, uint64(i))
		o := &owner{t: t, c: &c, bufs: newBufs(t, tc.size)}
		if tc.abort {
			o.write(p[:tc.n/2])
			o.bufs.put(c.Abort())
			if err := c.Reset(tc.size, tc.opts...); err != nil {
				t.Fatal(err)
			}
			o = &owner{t: t, c: &c, bufs: o.bufs}
		}
		o.write(p)
		check(t, p, tc.size, tc.withMD5, o.finish())
	}
}

func TestNewAndResetErrors(t *testing.T) {
	for _, size := range []int{0, -1, -q} {
		c, err := newChunker(size)
		if err == nil || c != nil {
			t.Errorf("New(%d) = %v, %v; want an error", size, c, err)
		}
		var z chunker.Chunker
		if err := z.Reset(size); err == nil {
			t.Errorf("Reset(%d) succeeded", size)
		}
	}
	c, err := newChunker(1, nil)
	if err != nil || c.ChunkSize() != 1 {
		t.Fatalf("New(1, nil) = %v, %v", c, err)
	}
}

func TestMD5IsACopy(t *testing.T) {
	o := newOwner(t, 8, chunker.WithMD5())
	if o.c.MD5() != nil {
		t.Fatal("MD5 before Finish")
	}
	o.write([]byte("abc"))
	o.finish()
	m := o.c.MD5()
	m[0] ^= 0xFF
	if bytes.Equal(m, o.c.MD5()) {
		t.Fatal("MD5 returned the Chunker's own slice")
	}
}

// TestAllocations checks what a Chunker allocates per object: itself (New)
// and the Pieces of each chunk longer than MaxPiece, nothing else, through
// Write and Fill alike.
func TestAllocations(t *testing.T) {
	ring := [2][]byte{}
	for _, tc := range []struct {
		name  string
		reset bool
		size  int
		n     int
		fill  bool
		want  float64
	}{
		{"New, small object", false, q, 1024, false, 1},
		{"New, Write", false, q, 3*q + 1, false, 1},
		{"New, Fill", false, q, 3*q + 1, true, 1},
		{"Reset, Write", true, q, 3*q + 1, false, 0},
		{"Reset, Fill", true, q, 3*q + 1, true, 0},
		{"Reset, empty", true, q, 0, false, 0},
		{"Reset, 2 MiB chunks", true, chunker.MaxPiece, 5 << 20, true, 0},
		// 5, 5 and 1 MiB: two chunks carry Pieces.
		{"Reset, 5 MiB chunks", true, 5 << 20, 11 << 20, false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ring[0], ring[1] = make([]byte, tc.size), make([]byte, tc.size)
			p := payload(tc.n)
			r := bytes.NewReader(p)
			var c chunker.Chunker
			allocs := testing.AllocsPerRun(5, func() {
				cc := &c
				if tc.reset {
					if err := c.Reset(tc.size); err != nil {
						panic(err)
					}
				} else {
					var err error
					if cc, err = newChunker(tc.size); err != nil {
						panic(err)
					}
				}
				r.Reset(p)
				chunkInto(cc, &ring, p, r, tc.fill)
			})
			if allocs != tc.want {
				t.Errorf("%.1f allocations per object, want %.0f", allocs, tc.want)
			}
		})
	}
}

// chunkInto runs p through c with two alternating buffers, by Write or by
// Fill from r (which holds p), and panics if the object's CRC-32C is wrong.
// It allocates nothing of its own.
func chunkInto(c *chunker.Chunker, ring *[2][]byte, p []byte, r io.Reader, fill bool) {
	next := 0
	attach := func() {
		if c.Holding() {
			c.Seal()
		}
		c.Attach(&ring[next])
		next ^= 1
	}
	for i := 0; ; i++ {
		if i == maxRounds {
			panic("chunkInto: no end")
		}
		if fill {
			if c.NeedsBuffer() {
				attach()
			}
			if _, err := c.Fill(r); err == io.EOF {
				break
			} else if err != nil {
				panic(err)
			}
			continue
		}
		if len(p) == 0 {
			break
		}
		if c.NeedsBuffer() || c.Full() {
			attach()
		}
		p = p[c.Write(p):]
	}
	if c.Holding() && c.NeedsBuffer() {
		attach()
	}
	c.Finish()
	if c.Size() != r.(*bytes.Reader).Size() {
		panic("chunkInto: wrong size")
	}
}

// TestContinuing checks that a Chunker continuing an object counts the
// bytes before it: offsets, Size and the whole object's CRC-32C.
func TestContinuing(t *testing.T) {
	whole := bytes.Repeat([]byte("appendable "), 300)
	for _, cut := range []int{0, 1, 1000, len(whole)} {
		var c chunker.Chunker
		if err := c.Reset(256, chunker.Continuing(int64(cut), crc32c(whole[:cut]))); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 256)
		c.Attach(&buf)
		off := int64(cut)
		for p := whole[cut:]; len(p) > 0; {
			k := c.Write(p)
			p = p[k:]
			if c.Full() {
				ch := c.Seal()
				if ch.Offset != off {
					t.Fatalf("cut %d: chunk at %d, want %d", cut, ch.Offset, off)
				}
				off += int64(len(ch.Data))
				c.Attach(&buf)
			}
		}
		last, _ := c.Finish()
		if last.Offset != off {
			t.Fatalf("cut %d: last chunk at %d, want %d", cut, last.Offset, off)
		}
		if got := c.Size(); got != int64(len(whole)) {
			t.Errorf("cut %d: Size %d, want %d", cut, got, len(whole))
		}
		if got, want := c.CRC32C(), crc32c(whole); got != want {
			t.Errorf("cut %d: CRC32C %08x, want %08x", cut, got, want)
		}
	}
}
