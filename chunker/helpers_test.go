package chunker_test

import (
	"bytes"
	"crypto/md5"
	"errors"
	"hash/crc32"
	"io"
	"sync"
	"testing"

	"github.com/objup/objup/chunker"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// maxRounds bounds every owner loop of these tests: no object here needs
// anywhere near that many Write or Fill calls.
const maxRounds = 1 << 25

// bufs hands out buffers of one size, as a pool would, and fails the test if
// one is given back twice, is not one of its own, or is never given back. Its
// buffers start filled with junk, so that nothing relies on zeroed memory,
// and are recycled through spare buffers, which keeps the fuzz test fast.
type bufs struct {
	t    testing.TB
	size int
	out  map[*[]byte]bool
	gets int
}

// spare holds buffers given back, by size, for the next bufs to reuse.
var spare struct {
	sync.Mutex
	bySize map[int][]*[]byte
}

func newBufs(t testing.TB, size int) *bufs {
	b := &bufs{t: t, size: size, out: map[*[]byte]bool{}}
	t.Cleanup(func() {
		if len(b.out) != 0 {
			t.Errorf("%d buffers never given back", len(b.out))
		}
	})
	return b
}

func (b *bufs) get() *[]byte {
	spare.Lock()
	var p *[]byte
	if s := spare.bySize[b.size]; len(s) > 0 {
		p, spare.bySize[b.size] = s[len(s)-1], s[:len(s)-1]
	}
	spare.Unlock()
	if p == nil {
		buf := bytes.Repeat([]byte{0xEE}, b.size)
		p = &buf
	}
	b.out[p] = true
	b.gets++
	return p
}

func (b *bufs) put(p *[]byte) {
	b.t.Helper()
	if !b.out[p] {
		b.t.Errorf("buffer given back that is not out")
		return
	}
	delete(b.out, p)
	spare.Lock()
	defer spare.Unlock()
	if spare.bySize == nil {
		spare.bySize = map[int][]*[]byte{}
	}
	if len(spare.bySize[b.size]) < 4 && b.size <= 16<<20 {
		spare.bySize[b.size] = append(spare.bySize[b.size], p)
	}
}

// piece is a chunk as the owner received it, with its data copied.
type piece struct {
	data   []byte
	offset int64
	crc    uint32
}

// result is everything a Chunker produced for one object.
type result struct {
	sealed     []piece
	last       piece
	lastBufNil bool
	oneShot    bool
	size       int64
	crc        uint32
	md5        []byte
}

// owner drives a Chunker the way an uploader does: it attaches a buffer when
// one is needed, seals full chunks only when more bytes follow, checks the
// shape of every chunk it takes out, copies it and gives its buffer back at
// once.
type owner struct {
	t    testing.TB
	c    *chunker.Chunker
	bufs *bufs
	res  result
}

func newOwner(t testing.TB, size int, opts ...chunker.Option) *owner {
	t.Helper()
	c, err := newChunker(size, opts...)
	if err != nil {
		t.Fatalf("New(%d): %v", size, err)
	}
	return &owner{t: t, c: c, bufs: newBufs(t, size)}
}

// take checks ch, records a copy of it and gives its buffer back.
func (o *owner) take(ch chunker.Chunk) piece {
	o.t.Helper()
	checkChunk(o.t, o.c.ChunkSize(), ch)
	p := piece{bytes.Clone(ch.Data), ch.Offset, ch.CRC32C}
	if ch.Buf != nil {
		o.bufs.put(ch.Buf)
	}
	return p
}

// seal takes the held chunk out and attaches a new buffer.
func (o *owner) seal() {
	o.t.Helper()
	if o.c.Holding() {
		o.res.sealed = append(o.res.sealed, o.take(o.c.Seal()))
	}
	o.c.Attach(o.bufs.get())
}

// write is the owner loop of a Write caller (the one in the package doc): a
// full buffer is sealed before more bytes are taken.
func (o *owner) write(p []byte) {
	o.t.Helper()
	for i := 0; len(p) > 0; i++ {
		if i == maxRounds {
			o.t.Fatalf("write: no end after %d rounds", i)
		}
		if o.c.NeedsBuffer() || o.c.Full() {
			o.seal()
		}
		// A Write takes at least one byte, unless a byte that Fill read
		// past the last chunk filled a one-byte chunk on Attach.
		k := o.c.Write(p)
		if k < 0 || k > len(p) || (k == 0 && !o.c.Full()) {
			o.t.Fatalf("Write(%d bytes) = %d with a buffer that has room", len(p), k)
		}
		p = p[k:]
	}
}

// writeSplit writes p with write calls of the given lengths, cycling through
// them (a 0 is an empty write). At least one length must be positive.
func (o *owner) writeSplit(p []byte, lengths []int) {
	o.t.Helper()
	for i := 0; len(p) > 0; i++ {
		if i == maxRounds {
			o.t.Fatalf("writeSplit: no end after %d rounds with lengths %v", i, lengths)
		}
		n := min(max(lengths[i%len(lengths)], 0), len(p))
		o.write(p[:n])
		p = p[n:]
	}
}

// fill is the owner loop of a Fill caller: a full buffer is sealed only when
// Fill has read a byte past it (NeedsBuffer). It reads r to its end and
// returns the bytes read and nil, or stops at the first other error of r and
// returns it.
func (o *owner) fill(r io.Reader) (int64, error) {
	o.t.Helper()
	var total int64
	for i := 0; ; i++ {
		if i == maxRounds {
			o.t.Fatalf("fill: no end after %d rounds", i)
		}
		if o.c.NeedsBuffer() {
			o.seal()
		}
		n, err := o.c.Fill(r)
		if n < 0 {
			o.t.Fatalf("Fill returned %d bytes", n)
		}
		total += int64(n)
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
		if !o.c.NeedsBuffer() {
			o.t.Fatalf("Fill returned %d, nil without a byte past a full chunk", n)
		}
	}
}

// finish ends the object and returns what the Chunker produced. A byte that
// Fill read past a full chunk right before the end needs one more buffer.
func (o *owner) finish() result {
	o.t.Helper()
	if o.c.Holding() && o.c.NeedsBuffer() {
		o.seal()
	}
	last, oneShot := o.c.Finish()
	o.res.last = o.take(last)
	o.res.lastBufNil = last.Buf == nil
	o.res.oneShot, o.res.size, o.res.crc, o.res.md5 = oneShot, o.c.Size(), o.c.CRC32C(), o.c.MD5()
	if o.c.Holding() {
		o.t.Errorf("Holding after Finish")
	}
	return o.res
}

// checkChunk checks the shape of one chunk: Data is (*Buf)[:n] of a buffer of
// the chunk size, and CRC32C and Pieces are the checksums of Data.
func checkChunk(t testing.TB, size int, ch chunker.Chunk) {
	t.Helper()
	if ch.Buf == nil {
		if len(ch.Data) != 0 {
			t.Errorf("chunk at %d: %d bytes without a Buf", ch.Offset, len(ch.Data))
		}
	} else {
		if len(*ch.Buf) != size {
			t.Errorf("chunk at %d: len(*Buf) = %d, want %d", ch.Offset, len(*ch.Buf), size)
		}
		if len(ch.Data) > 0 && &ch.Data[0] != &(*ch.Buf)[0] {
			t.Errorf("chunk at %d: Data is not (*Buf)[:n]", ch.Offset)
		}
	}
	if want := crc32c(ch.Data); ch.CRC32C != want {
		t.Errorf("chunk at %d: CRC32C %08x, want %08x", ch.Offset, ch.CRC32C, want)
	}
	checkPieces(t, ch)
}

// checkPieces checks Pieces and PieceCRC32C against a direct CRC-32C of each
// MaxPiece-byte piece of Data.
func checkPieces(t testing.TB, ch chunker.Chunk) {
	t.Helper()
	if len(ch.Data) <= chunker.MaxPiece {
		if ch.Pieces != nil {
			t.Errorf("chunk at %d of %d bytes has %d Pieces, want nil", ch.Offset, len(ch.Data), len(ch.Pieces))
		}
		if got := ch.PieceCRC32C(0); got != ch.CRC32C {
			t.Errorf("chunk at %d: PieceCRC32C(0) = %08x, want CRC32C %08x", ch.Offset, got, ch.CRC32C)
		}
		return
	}
	want := (len(ch.Data) + chunker.MaxPiece - 1) / chunker.MaxPiece
	if len(ch.Pieces) != want {
		t.Errorf("chunk at %d of %d bytes has %d Pieces, want %d", ch.Offset, len(ch.Data), len(ch.Pieces), want)
		return
	}
	for i := range want {
		p := ch.Data[i*chunker.MaxPiece : min((i+1)*chunker.MaxPiece, len(ch.Data))]
		if got, want := ch.Pieces[i], crc32c(p); got != want {
			t.Errorf("chunk at %d: piece %d (%d bytes) CRC32C %08x, want %08x", ch.Offset, i, len(p), got, want)
		}
		if ch.PieceCRC32C(i) != ch.Pieces[i] {
			t.Errorf("chunk at %d: PieceCRC32C(%d) is not Pieces[%d]", ch.Offset, i, i)
		}
	}
}

// check verifies r against the payload it came from, cut in chunks of size.
func check(t testing.TB, payload []byte, size int, withMD5 bool, r result) {
	t.Helper()
	var all []byte
	next := int64(0)
	for i, p := range r.sealed {
		if len(p.data) != size {
			t.Errorf("sealed chunk %d has %d bytes, want a full %d", i, len(p.data), size)
		}
		if p.offset != next {
			t.Errorf("sealed chunk %d at offset %d, want %d", i, p.offset, next)
		}
		next += int64(len(p.data))
		all = append(all, p.data...)
	}
	if r.last.offset != next {
		t.Errorf("last chunk at offset %d, want %d", r.last.offset, next)
	}
	if n := len(r.last.data); len(payload) > 0 && (n < 1 || n > size || r.lastBufNil) {
		t.Errorf("last chunk has %d bytes (nil Buf %v), want 1..%d", n, r.lastBufNil, size)
	}
	all = append(all, r.last.data...)
	if !bytes.Equal(all, payload) {
		t.Errorf("chunks do not add up to the payload (%d bytes vs %d)", len(all), len(payload))
	}
	if want := max(1, (len(payload)+size-1)/size); len(r.sealed)+1 != want {
		t.Errorf("%d chunks, want %d", len(r.sealed)+1, want)
	}
	if want := len(payload) <= size; r.oneShot != want {
		t.Errorf("oneShot = %v, want %v", r.oneShot, want)
	}
	if r.size != int64(len(payload)) {
		t.Errorf("Size = %d, want %d", r.size, len(payload))
	}
	if want := crc32.Checksum(payload, castagnoli); r.crc != want {
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

// pattern returns n deterministic bytes that do not repeat in any short
// period.
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

var errTransient = errors.New("transient read error")

// pieceReader returns p in reads of the given lengths, cycling through them
// and never beyond the caller's buffer. A length of 0 is a read that returns
// no data and errTransient, after which the reader goes on.
type pieceReader struct {
	p       []byte
	lengths []int
	i       int
}

func (r *pieceReader) Read(b []byte) (int, error) {
	if len(r.p) == 0 {
		return 0, io.EOF
	}
	n := r.lengths[r.i%len(r.lengths)]
	r.i++
	if n <= 0 {
		return 0, errTransient
	}
	n = copy(b[:min(n, len(b))], r.p)
	r.p = r.p[n:]
	return n, nil
}

// fillRetrying fills o from r, calling fill again after each errTransient,
// until r ends. It fails the test on any other error.
func (o *owner) fillRetrying(r io.Reader) int64 {
	o.t.Helper()
	var total int64
	for i := 0; ; i++ {
		if i == maxRounds {
			o.t.Fatalf("fillRetrying: no end after %d rounds", i)
		}
		n, err := o.fill(r)
		total += n
		switch {
		case err == nil:
			return total
		case !errors.Is(err, errTransient):
			o.t.Fatalf("fill: %v", err)
		}
	}
}

// badReader returns n and no error on every read, and counts its reads.
type badReader struct {
	n     int
	calls int
}

func (r *badReader) Read(p []byte) (int, error) {
	r.calls++
	return r.n, nil
}

// newChunker returns a Chunker reset to chunks of size bytes.
func newChunker(size int, opts ...chunker.Option) (*chunker.Chunker, error) {
	c := new(chunker.Chunker)
	if err := c.Reset(size, opts...); err != nil {
		return nil, err
	}
	return c, nil
}
