package chunker_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
	"testing"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/pool"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

var errExhausted = errors.New("test allocator: all buffers are out (a real one would block)")

// testAlloc is a pool.Allocator that records every buffer it hands out and
// fails the test if one is put back twice, is foreign, or is never put back.
// With max > 0, a Get while max buffers are out fails with errExhausted
// instead of blocking, which turns a chunker holding too many buffers into
// a test failure rather than a hang. Its buffers start filled with junk so
// that nothing relies on zeroed memory.
type testAlloc struct {
	t    testing.TB
	size int
	max  int

	mu   sync.Mutex
	out  map[*[]byte]bool
	gets int
	peak int
}

func newTestAlloc(t testing.TB, size, max int) *testAlloc {
	a := &testAlloc{t: t, size: size, max: max, out: map[*[]byte]bool{}}
	t.Cleanup(func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if len(a.out) != 0 {
			t.Errorf("test allocator: %d buffers never put back", len(a.out))
		}
	})
	return a
}

func (a *testAlloc) BufferSize() int { return a.size }

func (a *testAlloc) Get(ctx context.Context) (*[]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.gets++
	if a.max > 0 && len(a.out) >= a.max {
		return nil, errExhausted
	}
	b := bytes.Repeat([]byte{0xEE}, a.size)
	a.out[&b] = true
	a.peak = max(a.peak, len(a.out))
	return &b, nil
}

func (a *testAlloc) Put(b *[]byte) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.out[b] {
		a.t.Errorf("test allocator: Put of a buffer that is not out")
		return pool.ErrForeignBuffer
	}
	delete(a.out, b)
	return nil
}

func (a *testAlloc) outstanding() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.out)
}

// piece is a chunk as received, with its data copied.
type piece struct {
	data   []byte
	offset int64
	crc    uint32
}

// result is everything a chunker produced for one stream.
type result struct {
	emitted    []piece
	last       piece
	lastBufNil bool
	oneShot    bool
	size       int64
	crc        uint32
	md5        []byte
}

// collector returns an emit function that checks each chunk's shape, copies
// it into r and puts its buffer back at once.
func collector(t testing.TB, a pool.Allocator, r *result) func(chunker.Chunk) error {
	return func(ch chunker.Chunk) error {
		checkChunkShape(t, a, ch)
		r.emitted = append(r.emitted, piece{bytes.Clone(ch.Data), ch.Offset, ch.CRC32C})
		if err := a.Put(ch.Buf); err != nil {
			t.Errorf("Put of an emitted chunk: %v", err)
		}
		return nil
	}
}

func checkChunkShape(t testing.TB, a pool.Allocator, ch chunker.Chunk) {
	t.Helper()
	if ch.Buf == nil {
		t.Errorf("chunk at %d has a nil Buf", ch.Offset)
		return
	}
	if len(ch.Data) > 0 && &ch.Data[0] != &(*ch.Buf)[0] {
		t.Errorf("chunk at %d: Data is not (*Buf)[:n]", ch.Offset)
	}
	if len(*ch.Buf) != a.BufferSize() {
		t.Errorf("chunk at %d: len(*Buf) = %d, want %d", ch.Offset, len(*ch.Buf), a.BufferSize())
	}
}

// chunk runs one stream through a new Chunker: feed writes the payload, then
// Finish ends it; the last chunk's buffer is put back.
func chunk(t testing.TB, a pool.Allocator, feed func(c *chunker.Chunker) error, opts ...chunker.Option) result {
	t.Helper()
	var r result
	c, err := chunker.New(context.Background(), a, collector(t, a, &r), opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := feed(c); err != nil {
		c.Abort()
		t.Fatalf("feeding the chunker: %v", err)
	}
	last, oneShot, err := c.Finish()
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	r.last = piece{bytes.Clone(last.Data), last.Offset, last.CRC32C}
	r.lastBufNil = last.Buf == nil
	if last.Buf != nil {
		checkChunkShape(t, a, last)
		if err := a.Put(last.Buf); err != nil {
			t.Errorf("Put of the last chunk: %v", err)
		}
	}
	r.oneShot, r.size, r.crc, r.md5 = oneShot, c.Size(), c.CRC32C(), c.MD5()
	return r
}

// check verifies r against the payload it came from.
func check(t testing.TB, payload []byte, size int, withMD5 bool, r result) {
	t.Helper()
	var all []byte
	next := int64(0)
	for i, p := range r.emitted {
		if len(p.data) != size {
			t.Errorf("emitted chunk %d has %d bytes, want a full %d", i, len(p.data), size)
		}
		if p.offset != next {
			t.Errorf("emitted chunk %d at offset %d, want %d", i, p.offset, next)
		}
		if p.crc != crc32c(p.data) {
			t.Errorf("emitted chunk %d: CRC32C %08x, want %08x", i, p.crc, crc32c(p.data))
		}
		next += int64(len(p.data))
		all = append(all, p.data...)
	}
	if r.last.offset != next {
		t.Errorf("last chunk at offset %d, want %d", r.last.offset, next)
	}
	if r.last.crc != crc32c(r.last.data) {
		t.Errorf("last chunk: CRC32C %08x, want %08x", r.last.crc, crc32c(r.last.data))
	}
	if len(payload) == 0 {
		if len(r.last.data) != 0 || !r.lastBufNil {
			t.Errorf("empty object: last chunk has %d bytes, nil Buf %v", len(r.last.data), r.lastBufNil)
		}
	} else if n := len(r.last.data); n < 1 || n > size || r.lastBufNil {
		t.Errorf("last chunk has %d bytes (nil Buf %v), want 1..%d", n, r.lastBufNil, size)
	}
	all = append(all, r.last.data...)
	if !bytes.Equal(all, payload) {
		t.Errorf("chunks do not add up to the payload (%d bytes vs %d)", len(all), len(payload))
	}
	if want := len(payload) <= size; r.oneShot != want {
		t.Errorf("oneShot = %v, want %v", r.oneShot, want)
	}
	if r.size != int64(len(payload)) {
		t.Errorf("Size = %d, want %d", r.size, len(payload))
	}
	if want := crc32c(payload); r.crc != want {
		t.Errorf("CRC32C = %08x, want %08x", r.crc, want)
	}
	if withMD5 {
		if sum := md5.Sum(payload); !bytes.Equal(r.md5, sum[:]) {
			t.Errorf("MD5 = %x, want %x", r.md5, sum)
		}
	} else if r.md5 != nil {
		t.Errorf("MD5 = %x without WithMD5", r.md5)
	}
}

// readerOnly hides every method of a reader but Read (io.WriterTo in
// particular), so ReadFrom takes its own read loop.
type readerOnly struct{ r io.Reader }

func (r readerOnly) Read(p []byte) (int, error) { return r.r.Read(p) }

// pattern returns n deterministic, non-repeating-looking bytes.
func pattern(n int, seed uint64) []byte {
	b := make([]byte, n)
	x := seed | 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

// writeInPieces writes p with Write calls of the given lengths, cycling
// through them (a 0 length is an empty Write). At least one length must be
// positive.
func writeInPieces(c *chunker.Chunker, p []byte, lengths []int) error {
	empty := 0
	for i := 0; len(p) > 0; i++ {
		n := min(lengths[i%len(lengths)], len(p))
		if n <= 0 {
			if empty++; empty > len(lengths) {
				return fmt.Errorf("lengths %v make no progress", lengths)
			}
		} else {
			empty = 0
		}
		w, err := c.Write(p[:n])
		if err != nil {
			return err
		}
		if w != n {
			return fmt.Errorf("Write(%d bytes) = %d", n, w)
		}
		p = p[n:]
	}
	return nil
}

// pieceReader returns p in reads of the given lengths (cycling; a 0 length
// becomes 1), whatever the caller's buffer size beyond that.
type pieceReader struct {
	p       []byte
	lengths []int
	i       int
}

func (r *pieceReader) Read(b []byte) (int, error) {
	if len(r.p) == 0 {
		return 0, io.EOF
	}
	n := max(1, r.lengths[r.i%len(r.lengths)])
	r.i++
	n = copy(b[:min(n, len(b))], r.p)
	r.p = r.p[n:]
	return n, nil
}

// funcAlloc is an Allocator made of functions, for misbehaving allocators.
type funcAlloc struct {
	get  func(ctx context.Context) (*[]byte, error)
	put  func(b *[]byte) error
	size int
}

func (a funcAlloc) Get(ctx context.Context) (*[]byte, error) { return a.get(ctx) }
func (a funcAlloc) Put(b *[]byte) error                      { return a.put(b) }
func (a funcAlloc) BufferSize() int                          { return a.size }
