package chunker_test

import (
	"bytes"
	"testing"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/pool"
)

// FuzzChunker checks that any split of a payload, through Write or through
// ReadFrom, gives the same chunks and checksums as one single Write, and that
// those are right. bufSize picks the chunk size: 0 means pool.Quantum, other
// values give small chunks so that short inputs cross many boundaries. Each
// byte of splits is the length of one Write or Read (cycling).
//
// The seed corpus in testdata/fuzz/FuzzChunker runs with every go test.
func FuzzChunker(f *testing.F) {
	f.Add([]byte(""), []byte{}, uint16(1))
	f.Add([]byte("hello, world"), []byte{1, 2, 3}, uint16(4))
	f.Add(pattern(pool.Quantum+1, 1), []byte{255, 0, 17}, uint16(0))
	f.Add(pattern(pool.Quantum, 2), []byte{}, uint16(0))
	f.Fuzz(func(t *testing.T, data, splits []byte, bufSize uint16) {
		size := pool.Quantum
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

		ref := chunk(t, newTestAlloc(t, size, 1), func(c *chunker.Chunker) error {
			_, err := c.Write(data)
			return err
		}, chunker.WithMD5())
		check(t, data, size, true, ref)

		split := chunk(t, newTestAlloc(t, size, 1), func(c *chunker.Chunker) error {
			return writeInPieces(c, data, lengths)
		}, chunker.WithMD5())
		same(t, "split writes", ref, split)

		read := chunk(t, newTestAlloc(t, size, 1), func(c *chunker.Chunker) error {
			_, err := c.ReadFrom(&pieceReader{p: data, lengths: lengths})
			return err
		}, chunker.WithMD5())
		same(t, "split reads", ref, read)
	})
}

func same(t *testing.T, what string, want, got result) {
	t.Helper()
	if len(got.emitted) != len(want.emitted) {
		t.Fatalf("%s: %d chunks emitted, want %d", what, len(got.emitted), len(want.emitted))
	}
	for i := range want.emitted {
		samePiece(t, what, want.emitted[i], got.emitted[i])
	}
	samePiece(t, what+" (last chunk)", want.last, got.last)
	if got.oneShot != want.oneShot || got.size != want.size || got.crc != want.crc || !bytes.Equal(got.md5, want.md5) || got.lastBufNil != want.lastBufNil {
		t.Fatalf("%s: oneShot %v size %d crc %08x md5 %x nilBuf %v; want %v %d %08x %x %v", what,
			got.oneShot, got.size, got.crc, got.md5, got.lastBufNil,
			want.oneShot, want.size, want.crc, want.md5, want.lastBufNil)
	}
}

func samePiece(t *testing.T, what string, want, got piece) {
	t.Helper()
	if got.offset != want.offset || got.crc != want.crc || !bytes.Equal(got.data, want.data) {
		t.Fatalf("%s: chunk at %d (%d bytes, crc %08x), want at %d (%d bytes, crc %08x)", what,
			got.offset, len(got.data), got.crc, want.offset, len(want.data), want.crc)
	}
}
