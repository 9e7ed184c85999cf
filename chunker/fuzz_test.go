package chunker_test

import (
	"bytes"
	"testing"
	"testing/iotest"

	"github.com/objup/objup/chunker"
)

// FuzzChunker runs a payload through a Chunker in four ways, and checks each
// against the payload: the chunks add up to it byte for byte at the right
// offsets, every chunk but the last is full, the CRC-32Cs (per chunk and per
// object) and the MD5 are those of the data, and oneShot is true iff the
// payload fits in one chunk.
//
// bufSize picks the chunk size: 0 means pool.Quantum, other values give
// chunks of 1 to 512 bytes so that short inputs cross many boundaries. The
// bytes of splits are the lengths of the Writes, or of the reads that Fill
// gets (cycling): a 0 is an empty Write, or a read that fails with no data,
// after which the owner calls Fill again. The four ways are one Write, split
// Writes, Fill with split reads, and Writes and Fills in turn (odd lengths
// go through Fill from an iotest.DataErrReader, so that a Fill can end with
// a byte read past a full chunk, which the next Write must handle).
//
// The seed corpus in testdata/fuzz/FuzzChunker runs with every go test.
func FuzzChunker(f *testing.F) {
	f.Add([]byte(""), []byte{}, uint16(1))
	f.Add([]byte("hello, world"), []byte{1, 2, 3}, uint16(4))
	f.Add([]byte("hello, world"), []byte{0, 5, 0, 0, 3}, uint16(3))
	f.Add(pattern(q+1, 1), []byte{255, 0, 17}, uint16(0))
	f.Add(pattern(q, 2), []byte{}, uint16(0))
	f.Fuzz(func(t *testing.T, data, splits []byte, bufSize uint16) {
		size := q
		if bufSize != 0 {
			size = 1 + int(bufSize)%512
		}
		if len(data) > 64*size { // keep each run fast: at most 64 chunks
			data = data[:64*size]
		}
		lengths := make([]int, 0, len(splits)+1)
		progress := false
		for _, s := range splits {
			lengths = append(lengths, int(s))
			progress = progress || s != 0
		}
		if !progress {
			lengths = append(lengths, len(data)+1)
		}

		o := newOwner(t, size, chunker.WithMD5())
		o.write(data)
		check(t, data, size, true, o.finish())

		o = newOwner(t, size, chunker.WithMD5())
		o.writeSplit(data, lengths)
		check(t, data, size, true, o.finish())

		o = newOwner(t, size, chunker.WithMD5())
		if n := o.fillRetrying(&pieceReader{p: data, lengths: lengths}); n != int64(len(data)) {
			t.Fatalf("Fill read %d bytes, want %d", n, len(data))
		}
		check(t, data, size, true, o.finish())

		o = newOwner(t, size, chunker.WithMD5())
		p := data
		for i := 0; len(p) > 0; i++ {
			if i == maxRounds {
				t.Fatalf("no end after %d rounds", i)
			}
			n := min(lengths[i%len(lengths)], len(p))
			if n%2 == 0 {
				o.write(p[:n])
			} else if k, err := o.fill(iotest.DataErrReader(bytes.NewReader(p[:n]))); err != nil || k != int64(n) {
				t.Fatalf("fill = %d, %v; want %d", k, err, n)
			}
			p = p[n:]
		}
		check(t, data, size, true, o.finish())
	})
}
