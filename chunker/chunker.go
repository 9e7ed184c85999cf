package chunker

import (
	"crypto/md5"
	"fmt"
	"hash"
	"io"

	"github.com/objup/objup/internal/crc32c"
)

// MaxPiece is the largest piece that a chunk's CRC-32C is kept for: the
// service takes at most 2 MiB of content per write message, and every message
// carries its own CRC-32C.
const MaxPiece = 2 << 20

// Chunk is one piece of the stream, cut by Seal or Finish.
//
// Buf is the buffer that holds the chunk (the one given to Attach); whoever
// receives the Chunk owns Buf and must return it to where it came from once it
// no longer needs Data. Buf is nil only for the last chunk of an empty object
// written without a buffer. Data is (*Buf)[:n], the filled part; Offset is the
// position of Data[0] in the object; CRC32C is the CRC-32C (Castagnoli) of
// Data.
//
// Pieces holds the CRC-32C of each consecutive MaxPiece-byte piece of Data
// (the last may be shorter) when Data is longer than MaxPiece, so that every
// write message of at most MaxPiece bytes has its checksum without a second
// pass; it is nil otherwise, when CRC32C is the one piece's checksum.
type Chunk struct {
	Buf    *[]byte
	Data   []byte
	Offset int64
	CRC32C uint32
	Pieces []uint32
}

// PieceCRC32C returns the CRC-32C of piece i of Data (see Pieces).
func (c *Chunk) PieceCRC32C(i int) uint32 {
	if c.Pieces == nil {
		if i != 0 {
			panic(fmt.Sprintf("chunker: piece %d of a one-piece chunk", i))
		}
		return c.CRC32C
	}
	return c.Pieces[i]
}

// Option configures a Chunker. Options are created by the With functions of
// this package.
type Option interface {
	apply(*Chunker)
}

type optionFunc func(*Chunker)

func (f optionFunc) apply(c *Chunker) { f(c) }

// WithMD5 makes the Chunker compute the MD5 of the object, returned by MD5
// after Finish. Without it no MD5 is computed.
func WithMD5() Option {
	return optionFunc(func(c *Chunker) { c.md5 = md5.New() })
}

// Continuing makes the Chunker continue an object whose first size bytes,
// of CRC-32C crc, exist already (an appendable object taken over): chunk
// offsets start at size, and Size and CRC32C count those bytes. An MD5
// (WithMD5) covers only the bytes written through the Chunker. Continuing
// panics if size is negative.
func Continuing(size int64, crc uint32) Option {
	if size < 0 {
		panic("chunker: Continuing with a negative size")
	}
	return optionFunc(func(c *Chunker) { c.off, c.crc = size, crc })
}

// maxEmptyReads bounds consecutive reads that return neither data nor an
// error, after which Fill gives up with io.ErrNoProgress (as bufio does).
const maxEmptyReads = 100

// Chunker cuts a stream into chunks of a fixed size and checksums each byte
// once on the way. It does not fetch buffers: its owner attaches an empty
// buffer when NeedsBuffer says so, and takes each full chunk out with Seal.
// It never blocks, never talks to the network and knows no allocator.
//
// The zero Chunker is not usable until Reset gives it its chunk size, so a
// Chunker can live inside another struct without an allocation of its own.
// A Chunker is not safe for concurrent use.
type Chunker struct {
	size int

	buf     *[]byte // current chunk, nil if none is held
	n       int     // bytes filled in *buf
	off     int64   // object offset of (*buf)[0]
	crc     uint32  // CRC-32C of the sealed chunks
	sealed  int     // chunks taken out by Seal
	md5     hash.Hash
	sum     []byte  // MD5 after Finish
	probe   [1]byte // a byte read past a full chunk (see Fill); kept in c so the read does not allocate
	pending bool    // probe holds a byte
	done    bool    // Finish or Abort was called
}

// Reset makes c a new Chunker that cuts chunks of size bytes; it returns an
// error if size is not positive, and ignores nil options. It must not be
// called while c holds a buffer.
func (c *Chunker) Reset(size int, opts ...Option) error {
	if c.buf != nil {
		panic("chunker: Reset while a buffer is held")
	}
	if size <= 0 {
		return fmt.Errorf("chunker: chunk size %d is not positive", size)
	}
	*c = Chunker{size: size}
	for _, o := range opts {
		if o != nil {
			o.apply(c)
		}
	}
	return nil
}

// ChunkSize returns the size of every chunk but the last.
func (c *Chunker) ChunkSize() int { return c.size }

// Holding reports whether c holds a buffer.
func (c *Chunker) Holding() bool { return c.buf != nil }

// NeedsBuffer reports whether more bytes can only be taken after a Seal (if a
// full buffer is held) and an Attach: c holds no buffer, or its buffer is
// full and Fill has read a byte past it.
func (c *Chunker) NeedsBuffer() bool { return c.buf == nil || (c.n == c.size && c.pending) }

// Full reports whether c holds a buffer filled to the chunk size.
func (c *Chunker) Full() bool { return c.buf != nil && c.n == c.size }

// Attach gives c an empty buffer to fill; len(*b) must be the chunk size. The
// buffer belongs to c until Seal or Finish hands it out in a Chunk (or Abort
// returns it). A byte that Fill read past the previous chunk becomes the
// buffer's first byte.
//
// Attach panics if c already holds a buffer, after Finish or Abort, or if b
// has the wrong length: each is a programming error of the caller.
func (c *Chunker) Attach(b *[]byte) {
	switch {
	case c.done:
		panic("chunker: Attach after Finish or Abort")
	case c.buf != nil:
		panic("chunker: Attach while a buffer is held")
	case b == nil || len(*b) != c.size:
		panic(fmt.Sprintf("chunker: Attach of a buffer that is not %d bytes", c.size))
	}
	c.buf, c.n = b, 0
	if c.pending {
		(*b)[0] = c.probe[0]
		c.n, c.pending = 1, false
	}
}

// Write copies as much of p as fits into the held buffer and returns how many
// bytes it took (0 when no buffer is held or it is full). It never keeps p.
func (c *Chunker) Write(p []byte) int {
	if c.buf == nil || c.pending {
		return 0
	}
	k := copy((*c.buf)[c.n:c.size], p)
	c.n += k
	return k
}

// Fill reads r straight into the held buffer until the buffer is full, r
// ends, or r fails, and returns the number of bytes read. When the buffer is
// full, Fill reads one byte aside to learn whether the stream goes on: if it
// does, NeedsBuffer turns true and Fill returns nil, so that a stream ending on
// a chunk boundary keeps its last chunk for Finish. At the end of r Fill
// returns io.EOF. Any other error of r is returned as it is, with the bytes
// read before it kept; r returning no data and no error 100 times in a row
// gives io.ErrNoProgress.
//
// Fill panics if c holds no buffer or NeedsBuffer is true.
func (c *Chunker) Fill(r io.Reader) (int, error) {
	if c.buf == nil || c.pending {
		panic("chunker: Fill needs an attached buffer with room")
	}
	total, empty := 0, 0
	for {
		var k int
		var err error
		if c.n == c.size {
			k, err = r.Read(c.probe[:])
			if k < 0 || k > 1 {
				return total, fmt.Errorf("chunker: reader returned %d bytes for a 1-byte read", k)
			}
			c.pending = k == 1
		} else {
			p := (*c.buf)[c.n:c.size]
			k, err = r.Read(p)
			if k < 0 || k > len(p) {
				return total, fmt.Errorf("chunker: reader returned %d bytes for a %d-byte read", k, len(p))
			}
			c.n += k
		}
		total += k
		switch {
		case err != nil:
			return total, err
		case c.pending:
			return total, nil
		case k > 0:
			empty = 0
		default:
			if empty++; empty >= maxEmptyReads {
				return total, io.ErrNoProgress
			}
		}
	}
}

// Seal checksums the held buffer and hands it out as a Chunk; c then holds no
// buffer. The chunk is full unless the stream ends with it (use Finish for
// that). Seal panics if c holds no buffer.
func (c *Chunker) Seal() Chunk {
	if c.buf == nil {
		panic("chunker: Seal without a buffer")
	}
	c.sealed++
	return c.seal()
}

// Finish ends the stream: it returns the last chunk (the held buffer's
// filled part, possibly empty, or a Chunk with a nil Buf if none is held),
// owned by the caller, and whether the whole object is that chunk (oneShot:
// Seal was never called). After Finish, Size, CRC32C and MD5 describe the
// whole object.
//
// Finish panics if a byte read past a full chunk is waiting for a buffer
// (NeedsBuffer after Fill): the caller must Seal and Attach first. Calling it
// again, or after Abort, panics too.
func (c *Chunker) Finish() (last Chunk, oneShot bool) {
	switch {
	case c.done:
		panic("chunker: Finish after Finish or Abort")
	case c.pending:
		panic("chunker: Finish with a byte waiting for a buffer")
	}
	c.done = true
	last = c.seal()
	if c.md5 != nil {
		c.sum = c.md5.Sum(nil)
	}
	return last, c.sealed == 0
}

// Abort hands back the buffer c holds, if any (the caller returns it to where
// it came from), and ends c: nothing more may be attached.
func (c *Chunker) Abort() *[]byte {
	b := c.buf
	c.buf, c.n, c.done = nil, 0, true
	return b
}

// Size returns the number of bytes accepted so far; after Finish, the size of
// the object.
func (c *Chunker) Size() int64 {
	n := c.off + int64(c.n)
	if c.pending {
		n++
	}
	return n
}

// CRC32C returns the CRC-32C (Castagnoli) of the whole object. It is valid
// only after Finish.
func (c *Chunker) CRC32C() uint32 { return c.crc }

// MD5 returns the MD5 of the whole object after Finish, if c was created
// WithMD5, and nil otherwise. The caller may keep and modify the slice.
func (c *Chunker) MD5() []byte {
	if c.sum == nil {
		return nil
	}
	return append([]byte(nil), c.sum...)
}

// seal checksums the current chunk, piece by piece, and releases it.
func (c *Chunker) seal() Chunk {
	var data []byte
	if c.buf != nil {
		data = (*c.buf)[:c.n]
	}
	ch := Chunk{Buf: c.buf, Data: data, Offset: c.off}
	if len(data) <= MaxPiece {
		ch.CRC32C = crc32c.Checksum(data)
	} else {
		ch.Pieces = make([]uint32, 0, (len(data)+MaxPiece-1)/MaxPiece)
		for p := data; len(p) > 0; {
			k := min(len(p), MaxPiece)
			crc := crc32c.Checksum(p[:k])
			ch.Pieces = append(ch.Pieces, crc)
			ch.CRC32C = crc32c.Combine(ch.CRC32C, crc, int64(k))
			p = p[k:]
		}
	}
	if c.md5 != nil {
		c.md5.Write(data)
	}
	c.crc = crc32c.Combine(c.crc, ch.CRC32C, int64(len(data)))
	c.off += int64(len(data))
	c.buf, c.n = nil, 0
	return ch
}
