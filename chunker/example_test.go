package chunker_test

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"strings"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/pool"
)

func Example() {
	// Tiny 8-byte chunks over a caller's buffer, to show the cutting; real
	// uploads use pool.Default() or a pool.Pool of Quantum-sized buffers.
	a, err := pool.NewFixed(make([]byte, 8))
	if err != nil {
		panic(err)
	}
	c, err := chunker.New(context.Background(), a, func(ch chunker.Chunk) error {
		fmt.Printf("chunk at %2d: %q crc32c %08x\n", ch.Offset, ch.Data, ch.CRC32C)
		return a.Put(ch.Buf) // the receiver owns the buffer
	})
	if err != nil {
		panic(err)
	}
	if _, err := c.ReadFrom(strings.NewReader("hello, chunked world")); err != nil {
		c.Abort()
		panic(err)
	}
	last, oneShot, err := c.Finish()
	if err != nil {
		panic(err)
	}
	fmt.Printf("last at %2d: %q crc32c %08x, one shot: %v\n", last.Offset, last.Data, last.CRC32C, oneShot)
	if err := a.Put(last.Buf); err != nil {
		panic(err)
	}
	fmt.Printf("object: %d bytes, crc32c %08x\n", c.Size(), c.CRC32C())
	// Output:
	// chunk at  0: "hello, c" crc32c dad50fec
	// chunk at  8: "hunked w" crc32c 54a7f5c6
	// last at 16: "orld" crc32c 37120cd2, one shot: false
	// object: 20 bytes, crc32c 636d7d76
}

// A small object stays in its first chunk: Finish reports the one-shot case,
// and nothing was emitted.
func Example_oneShot() {
	a := pool.Default()
	c, err := chunker.New(context.Background(), a, func(ch chunker.Chunk) error {
		defer a.Put(ch.Buf)
		return fmt.Errorf("unexpected chunk at %d", ch.Offset)
	}, chunker.WithMD5())
	if err != nil {
		panic(err)
	}
	if _, err := io.WriteString(c, "a small object"); err != nil {
		c.Abort()
		panic(err)
	}
	last, oneShot, err := c.Finish()
	if err != nil {
		panic(err)
	}
	defer a.Put(last.Buf)
	fmt.Println(oneShot, len(last.Data), c.Size())
	fmt.Printf("crc32c %08x md5 %x\n", c.CRC32C(), c.MD5())
	// Output:
	// true 14 14
	// crc32c 930524e9 md5 64e2d66e6a61dabceaadab61c57ec00e
}

func ExampleCombineCRC32C() {
	table := crc32.MakeTable(crc32.Castagnoli)
	a, b := []byte("hello, "), []byte("world")
	crcA, crcB := crc32.Checksum(a, table), crc32.Checksum(b, table)

	// The CRC-32C of a+b, from the two CRCs and the length of b.
	crc := chunker.CombineCRC32C(crcA, crcB, int64(len(b)))
	fmt.Printf("%08x %08x\n", crc, crc32.Checksum([]byte("hello, world"), table))
	// Output:
	// 6999a41f 6999a41f
}
