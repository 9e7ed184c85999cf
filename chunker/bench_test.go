package chunker_test

import (
	"bytes"
	"context"
	"hash/crc32"
	"sync"
	"testing"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/pool"
)

var (
	bigPayload = sync.OnceValue(func() []byte { return pattern(64<<20, 42) })
	sinkCRC    uint32
)

// BenchmarkChunk64MiB measures chunking plus CRC32C of a 64 MiB stream into
// Quantum-sized pool buffers that the emit function puts back at once, fed by
// one Write or by ReadFrom, next to impl=limit: a plain loop that copies into
// one 256 KiB buffer and runs crc32.Update over it. Compare with
// benchstat -col /impl.
func BenchmarkChunk64MiB(b *testing.B) {
	src := bigPayload()
	p := pool.Default()
	ctx := context.Background()
	emit := func(ch chunker.Chunk) error { return p.Put(ch.Buf) }
	warmUp(b, p)

	run := func(b *testing.B, feed func(c *chunker.Chunker) error) {
		b.ReportAllocs()
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			c, err := chunker.New(ctx, p, emit)
			if err != nil {
				b.Fatal(err)
			}
			if err := feed(c); err != nil {
				b.Fatal(err)
			}
			last, _, err := c.Finish()
			if err != nil {
				b.Fatal(err)
			}
			if err := p.Put(last.Buf); err != nil {
				b.Fatal(err)
			}
			sinkCRC = c.CRC32C()
		}
		if sinkCRC != crc32c(src) {
			b.Fatal("wrong CRC32C")
		}
	}
	b.Run("impl=Write", func(b *testing.B) {
		run(b, func(c *chunker.Chunker) error {
			_, err := c.Write(src)
			return err
		})
	})
	b.Run("impl=ReadFrom", func(b *testing.B) {
		run(b, func(c *chunker.Chunker) error {
			_, err := c.ReadFrom(readerOnly{bytes.NewReader(src)})
			return err
		})
	})
	b.Run("impl=limit", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(src)))
		dst := make([]byte, pool.Quantum)
		for b.Loop() {
			var crc uint32
			for off := 0; off < len(src); off += len(dst) {
				n := copy(dst, src[off:])
				crc = crc32.Update(crc, castagnoli, dst[:n])
			}
			sinkCRC = crc
		}
		if sinkCRC != crc32c(src) {
			b.Fatal("wrong CRC32C")
		}
	})
}

// BenchmarkSmallObject measures the whole life of a chunker for a 1 KiB
// object that fits in one pooled chunk.
func BenchmarkSmallObject(b *testing.B) {
	p := pool.Default()
	ctx := context.Background()
	obj := pattern(1024, 1)
	emit := func(ch chunker.Chunk) error { return p.Put(ch.Buf) }
	warmUp(b, p)
	b.ReportAllocs()
	b.SetBytes(int64(len(obj)))
	for b.Loop() {
		c, err := chunker.New(ctx, p, emit)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Write(obj); err != nil {
			b.Fatal(err)
		}
		last, oneShot, err := c.Finish()
		if err != nil || !oneShot {
			b.Fatal(err, oneShot)
		}
		if err := p.Put(last.Buf); err != nil {
			b.Fatal(err)
		}
	}
}

// warmUp gets a pooled buffer and puts it back so that measured loops start
// in the steady state.
func warmUp(b *testing.B, p *pool.Pool) {
	buf, err := p.Get(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Put(buf); err != nil {
		b.Fatal(err)
	}
}
