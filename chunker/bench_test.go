package chunker_test

import (
	"bytes"
	"hash/crc32"
	"sync"
	"testing"

	"github.com/objup/objup/chunker"
)

var (
	bigPayload = sync.OnceValue(func() []byte { return pattern(64<<20, 42) })
	sinkCRC    uint32
)

// BenchmarkChunk64MiB measures chunking plus CRC-32C of a 64 MiB object in
// Quantum-sized chunks, through Write (one call) or through Fill (from a
// bytes.Reader), with a new Chunker per object and two buffers that the
// owner reattaches as soon as a chunk is sealed, next to impl=baseline (run
// first, so that benchstat -col /impl compares with it): a plain loop that
// copies into one Quantum-sized buffer and runs crc32.Update over it.
func BenchmarkChunk64MiB(b *testing.B) {
	src := bigPayload()
	want := crc32c(src)
	b.Run("impl=baseline", func(b *testing.B) {
		dst := make([]byte, q)
		b.ReportAllocs()
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			var crc uint32
			for off := 0; off < len(src); off += len(dst) {
				n := copy(dst, src[off:])
				crc = crc32.Update(crc, castagnoli, dst[:n])
			}
			sinkCRC = crc
		}
		if sinkCRC != want {
			b.Fatal("wrong CRC32C")
		}
	})
	for _, tc := range []struct {
		name string
		fill bool
	}{
		{"Write", false},
		{"Fill", true},
	} {
		b.Run("impl="+tc.name, func(b *testing.B) {
			var ring [2][]byte
			ring[0], ring[1] = make([]byte, q), make([]byte, q)
			r := bytes.NewReader(src)
			b.ReportAllocs()
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				c, err := newChunker(q)
				if err != nil {
					b.Fatal(err)
				}
				r.Reset(src)
				chunkInto(c, &ring, src, r, tc.fill)
				sinkCRC = c.CRC32C()
			}
			if sinkCRC != want {
				b.Fatal("wrong CRC32C")
			}
		})
	}
}

// BenchmarkSmallObject measures the whole life of a Chunker for a 1 KiB
// object that fits in its first chunk: a new Chunker per object, or one
// reused through Reset.
func BenchmarkSmallObject(b *testing.B) {
	obj := pattern(1024, 1)
	buf := make([]byte, q)
	run := func(b *testing.B, c func() *chunker.Chunker) {
		b.ReportAllocs()
		b.SetBytes(int64(len(obj)))
		for b.Loop() {
			ch := c()
			ch.Attach(&buf)
			ch.Write(obj)
			last, oneShot := ch.Finish()
			if !oneShot || len(last.Data) != len(obj) {
				b.Fatal("not one shot")
			}
			sinkCRC = ch.CRC32C()
		}
	}
	b.Run("impl=New", func(b *testing.B) {
		run(b, func() *chunker.Chunker {
			c, err := newChunker(q)
			if err != nil {
				b.Fatal(err)
			}
			return c
		})
	})
	b.Run("impl=Reset", func(b *testing.B) {
		var c chunker.Chunker
		run(b, func() *chunker.Chunker {
			if err := c.Reset(q); err != nil {
				b.Fatal(err)
			}
			return &c
		})
	})
}
