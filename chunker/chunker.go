// Package chunker cuts a byte stream into chunks held in allocator buffers,
// and checksums each byte once on the way: CRC-32C per chunk, the object's
// CRC-32C derived from those by CombineCRC32C, and MD5 when asked.
//
// A Chunker fills one buffer from its pool.Allocator at a time, through Write,
// WriteString or ReadFrom (which reads straight into the buffer). Each chunk
// has exactly BufferSize bytes except the last. A full chunk is handed to the
// emit function only when the next byte needs room, so when the stream ends
// Finish knows whether the whole object fit in the first chunk (the one-shot
// case, which an uploader can send in a single request).
//
// # Ownership
//
// Buffers come from the Allocator and go back to it through whoever holds
// them: a Chunk's buffer belongs to the receiver of the Chunk (emit, or the
// caller of Finish), which must Put it back once done with it. Until then the
// Chunker holds at most one buffer, which Abort returns.
package chunker

import (
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"github.com/objup/objup/internal/crc32c"
	"hash"
	"io"

	"github.com/objup/objup/pool"
)

// Chunk is one piece of the stream.
//
// Buf is the allocator buffer that holds the chunk; whoever receives the
// Chunk owns Buf and must return it to the allocator with Put once it no
// longer needs Data. Buf is nil only for the last chunk of an empty object.
// Data is (*Buf)[:n], the filled part; Offset is the position of Data[0] in
// the object; CRC32C is the CRC-32C (Castagnoli) of Data.
type Chunk struct {
	Buf    *[]byte
	Data   []byte
	Offset int64
	CRC32C uint32
}

// Option configures a Chunker. Options are created by the With functions of
// this package.
type Option interface {
	apply(*config)
}

type config struct {
	md5 bool
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithMD5 makes the Chunker compute the MD5 of the object, returned by MD5
// after Finish. Without it no MD5 is computed.
func WithMD5() Option {
	return optionFunc(func(c *config) { c.md5 = true })
}

var (
	errFinished  = errors.New("chunker: write after Finish")
	errAborted   = errors.New("chunker: use after Abort")
	errNotNew    = errors.New("chunker: Chunker not created with New")
	errNilReader = errors.New("chunker: nil reader")
)

// maxEmptyReads bounds consecutive reads that return neither data nor an
// error, after which ReadFrom gives up with io.ErrNoProgress (as bufio does).
const maxEmptyReads = 100

// Chunker cuts a stream into chunks. Create it with New. It is not safe for
// concurrent use, and emit must not call its methods.
//
// Errors from emit and from the allocator are sticky: the Chunker is broken
// and every later Write, ReadFrom and Finish returns the same error. Errors
// from a reader passed to ReadFrom are not: the bytes read before the error
// are kept and the stream can go on.
type Chunker struct {
	ctx   context.Context
	alloc pool.Allocator
	emit  func(Chunk) error
	size  int
	cfg   config

	buf     *[]byte // current chunk, nil if none is held
	n       int     // bytes filled in *buf
	off     int64   // object offset of (*buf)[0]
	crc     uint32  // CRC-32C of the sealed chunks
	emitted int     // chunks handed to emit
	md5     hash.Hash
	sum     []byte // MD5 after Finish
	err     error  // sticky error
	done    bool   // Finish succeeded
	probe   [1]byte
}

// New returns a Chunker that takes buffers from a, with ctx used for every
// a.Get, and hands each full chunk to emit on the caller's goroutine (see the
// package doc for when). emit receives ownership of the chunk's buffer
// whatever it returns; if it returns an error, the write that triggered it
// returns that error and the Chunker is broken.
//
// New returns an error if ctx, a or emit is nil, or if a.BufferSize() is not
// positive. Nil options are ignored.
func New(ctx context.Context, a pool.Allocator, emit func(Chunk) error, opts ...Option) (*Chunker, error) {
	switch {
	case ctx == nil:
		return nil, errors.New("chunker: nil context")
	case a == nil:
		return nil, errors.New("chunker: nil allocator")
	case emit == nil:
		return nil, errors.New("chunker: nil emit function")
	}
	size := a.BufferSize()
	if size <= 0 {
		return nil, fmt.Errorf("chunker: allocator buffer size %d is not positive", size)
	}
	// The options apply to a config inside the Chunker, which is on the heap
	// anyway: a local config would escape through the interface call.
	c := &Chunker{ctx: ctx, alloc: a, emit: emit, size: size}
	for _, o := range opts {
		if o != nil {
			o.apply(&c.cfg)
		}
	}
	if c.cfg.md5 {
		c.md5 = md5.New()
	}
	return c, nil
}

// ChunkSize returns the size of every chunk but the last: the allocator's
// BufferSize.
func (c *Chunker) ChunkSize() int { return c.size }

// Write appends p to the stream, copying it into chunk buffers; it never keeps
// p. It fetches a buffer from the allocator when the current one is full
// (emitting the full one first), which may block; if that fails, or emit
// fails, Write returns the count of bytes accepted before and the error.
func (c *Chunker) Write(p []byte) (int, error) { return write(c, p) }

// WriteString is Write for a string, without converting it to a []byte.
func (c *Chunker) WriteString(s string) (int, error) { return write(c, s) }

func write[T string | []byte](c *Chunker, p T) (int, error) {
	if err := c.usable(); err != nil {
		return 0, err
	}
	n := 0
	for len(p) > 0 {
		if err := c.room(); err != nil {
			return n, err
		}
		k := copy((*c.buf)[c.n:c.size], p)
		c.n += k
		n += k
		p = p[k:]
	}
	return n, nil
}

// ReadFrom reads r until io.EOF straight into chunk buffers, with no staging
// buffer, and returns the number of bytes read; io.EOF is not an error. If r
// implements io.WriterTo, ReadFrom uses r.WriteTo(c) instead. When a chunk is
// full, ReadFrom reads one byte aside to learn whether the stream goes on
// before emitting it, so a stream that ends on a chunk boundary keeps its last
// chunk for Finish.
//
// An error from r is returned with the count of bytes read before it, and the
// Chunker stays usable. An error from the allocator or emit breaks it.
func (c *Chunker) ReadFrom(r io.Reader) (int64, error) {
	if err := c.usable(); err != nil {
		return 0, err
	}
	if r == nil {
		return 0, errNilReader
	}
	if wt, ok := r.(io.WriterTo); ok {
		return wt.WriteTo(c)
	}
	var total int64
	empty := 0
	for {
		var k int
		var err error
		if c.buf != nil && c.n == c.size {
			// Full chunk: learn whether more follows before emitting it.
			k, err = r.Read(c.probe[:])
			if k < 0 || k > 1 {
				return total, fmt.Errorf("chunker: reader returned %d bytes for a 1-byte read", k)
			}
			if k == 1 {
				if rerr := c.room(); rerr != nil {
					return total, rerr
				}
				(*c.buf)[0] = c.probe[0]
				c.n = 1
			}
		} else {
			if rerr := c.room(); rerr != nil {
				return total, rerr
			}
			p := (*c.buf)[c.n:c.size]
			k, err = r.Read(p)
			if k < 0 || k > len(p) {
				return total, fmt.Errorf("chunker: reader returned %d bytes for a %d-byte read", k, len(p))
			}
			c.n += k
		}
		total += int64(k)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return total, nil
			}
			return total, err
		}
		if k > 0 {
			empty = 0
		} else if empty++; empty >= maxEmptyReads {
			return total, io.ErrNoProgress
		}
	}
}

// Finish ends the stream. It returns the last chunk, which is not emitted and
// is owned by the caller, and whether the whole object fit in the first chunk
// (oneShot: no chunk was emitted). The last chunk holds between 1 and
// ChunkSize bytes, or none for an empty object; then its Buf is nil and
// nothing must be put back.
//
// After Finish, Size, CRC32C and MD5 describe the whole object, and Write,
// ReadFrom and Finish return an error. If the Chunker is broken, Finish
// returns its error.
func (c *Chunker) Finish() (last Chunk, oneShot bool, err error) {
	if err := c.usable(); err != nil {
		return Chunk{}, false, err
	}
	c.done = true
	if c.buf != nil && c.n == 0 {
		// Fetched for a read that found the end of the stream.
		_ = c.alloc.Put(c.buf)
		c.buf = nil
	}
	last = c.seal()
	if c.md5 != nil {
		c.sum = c.md5.Sum(nil)
	}
	return last, c.emitted == 0, nil
}

// Abort returns the buffer the Chunker holds, if any, to the allocator and
// breaks the Chunker, for error paths. Chunks already emitted or returned by
// Finish stay with their receivers. Abort is idempotent, and does nothing
// after a successful Finish.
func (c *Chunker) Abort() {
	if c.buf != nil {
		_ = c.alloc.Put(c.buf)
		c.buf, c.n = nil, 0
	}
	if c.err == nil && !c.done {
		c.err = errAborted
	}
}

// Size returns the number of bytes accepted so far; after Finish, the size of
// the object.
func (c *Chunker) Size() int64 { return c.off + int64(c.n) }

// CRC32C returns the CRC-32C (Castagnoli) of the whole object. It is valid
// only after a successful Finish.
func (c *Chunker) CRC32C() uint32 { return c.crc }

// MD5 returns the MD5 of the whole object after a successful Finish, if the
// Chunker was created WithMD5, and nil otherwise. The caller may keep and
// modify the returned slice.
func (c *Chunker) MD5() []byte {
	if c.sum == nil {
		return nil
	}
	return append([]byte(nil), c.sum...)
}

func (c *Chunker) usable() error {
	switch {
	case c.err != nil:
		return c.err
	case c.done:
		return errFinished
	case c.alloc == nil:
		return errNotNew
	}
	return nil
}

// room makes sure the current chunk has at least one free byte: it emits a
// full chunk and fetches a new buffer as needed.
func (c *Chunker) room() error {
	if c.buf != nil {
		if c.n < c.size {
			return nil
		}
		ch := c.seal()
		c.emitted++
		if err := c.emit(ch); err != nil {
			c.err = err
			return err
		}
	}
	b, err := c.alloc.Get(c.ctx)
	switch {
	case err != nil:
		c.err = err
		return err
	case b == nil:
		c.err = errors.New("chunker: allocator returned a nil buffer")
		return c.err
	case len(*b) != c.size:
		c.err = fmt.Errorf("chunker: allocator returned a buffer of %d bytes, want BufferSize %d", len(*b), c.size)
		_ = c.alloc.Put(b)
		return c.err
	}
	c.buf = b
	return nil
}

// seal checksums the current chunk and releases it from the Chunker (as a
// Chunk with a nil Buf if none is held).
func (c *Chunker) seal() Chunk {
	var data []byte
	if c.buf != nil {
		data = (*c.buf)[:c.n]
	}
	crc := crc32c.Checksum(data)
	if c.md5 != nil {
		c.md5.Write(data)
	}
	c.crc = crc32c.Combine(c.crc, crc, int64(len(data)))
	ch := Chunk{Buf: c.buf, Data: data, Offset: c.off, CRC32C: crc}
	c.off += int64(len(data))
	c.buf, c.n = nil, 0
	return ch
}
