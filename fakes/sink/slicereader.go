package sink

import (
	"encoding/binary"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
)

// sliceReader reads the wire format across the buffers of a BufferSlice.
type sliceReader struct {
	bufs mem.BufferSlice
	next int    // the next buffer to read
	cur  []byte // what is left of the current buffer
	pos  int    // bytes read so far
	len  int    // bytes in all
}

func newSliceReader(b mem.BufferSlice) sliceReader {
	return sliceReader{bufs: b, len: b.Len()}
}

func (r *sliceReader) remaining() int { return r.len - r.pos }

// fill makes cur non-empty, unless the data is all read.
func (r *sliceReader) fill() bool {
	for len(r.cur) == 0 {
		if r.next == len(r.bufs) {
			return false
		}
		r.cur = r.bufs[r.next].ReadOnlyData()
		r.next++
	}
	return true
}

func (r *sliceReader) varint() (uint64, error) {
	if !r.fill() {
		return 0, errSinkTruncated
	}
	if len(r.cur) >= binary.MaxVarintLen64 || r.cur[len(r.cur)-1] < 0x80 {
		v, n := protowire.ConsumeVarint(r.cur)
		if n < 0 {
			return 0, errSinkVarint
		}
		r.cur, r.pos = r.cur[n:], r.pos+n
		return v, nil
	}
	// Across buffers: a byte at a time.
	var v uint64
	for i := range binary.MaxVarintLen64 {
		if !r.fill() {
			return 0, errSinkTruncated
		}
		c := r.cur[0]
		r.cur, r.pos = r.cur[1:], r.pos+1
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, errSinkVarint
			}
			return v, nil
		}
	}
	return 0, errSinkVarint
}

// length reads a length prefix, which must not run past the data.
func (r *sliceReader) length() (int, error) {
	l, err := r.varint()
	if err != nil {
		return 0, err
	}
	if l > uint64(r.remaining()) {
		return 0, errSinkTruncated
	}
	return int(l), nil
}

func (r *sliceReader) skip(n int) error {
	for n > 0 {
		if !r.fill() {
			return errSinkTruncated
		}
		k := min(n, len(r.cur))
		r.cur, r.pos, n = r.cur[k:], r.pos+k, n-k
	}
	return nil
}

func (r *sliceReader) read(p []byte) error {
	for len(p) > 0 {
		if !r.fill() {
			return errSinkTruncated
		}
		k := copy(p, r.cur)
		r.cur, r.pos, p = r.cur[k:], r.pos+k, p[k:]
	}
	return nil
}

// appendN appends the next n bytes to dst.
func (r *sliceReader) appendN(dst []byte, n int) ([]byte, error) {
	for n > 0 {
		if !r.fill() {
			return dst, errSinkTruncated
		}
		k := min(n, len(r.cur))
		dst = append(dst, r.cur[:k]...)
		r.cur, r.pos, n = r.cur[k:], r.pos+k, n-k
	}
	return dst, nil
}

// appendVarint reads a varint and appends it to dst as it was encoded.
func (r *sliceReader) appendVarint(dst []byte) (uint64, []byte, error) {
	var v uint64
	for i := range binary.MaxVarintLen64 {
		if !r.fill() {
			return 0, dst, errSinkTruncated
		}
		c := r.cur[0]
		r.cur, r.pos = r.cur[1:], r.pos+1
		dst = append(dst, c)
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, dst, errSinkVarint
			}
			return v, dst, nil
		}
	}
	return 0, dst, errSinkVarint
}

// appendField appends the value of a field of wire type typ, whose tag was
// just read, to dst as it was encoded.
func (r *sliceReader) appendField(dst []byte, typ protowire.Type) ([]byte, error) {
	switch typ {
	case protowire.VarintType:
		_, dst, err := r.appendVarint(dst)
		return dst, err
	case protowire.Fixed32Type:
		return r.appendN(dst, 4)
	case protowire.Fixed64Type:
		return r.appendN(dst, 8)
	case protowire.BytesType:
		l, dst, err := r.appendVarint(dst)
		if err != nil {
			return dst, err
		}
		if l > uint64(r.remaining()) {
			return dst, errSinkTruncated
		}
		return r.appendN(dst, int(l))
	}
	return dst, errSinkUnusual
}
