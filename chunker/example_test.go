package chunker_test

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"io"
	"strings"

	"github.com/objup/objup/chunker"
)

// The owner loop of a Write caller: attach a buffer when the Chunker needs
// one, and take a full chunk out only when more bytes follow, so that the
// last chunk is left for Finish.
func Example() {
	// Tiny 8-byte chunks, to show the cutting; an uploader uses buffers of
	// pool.Quantum bytes from a pool.Pool.
	var c chunker.Chunker
	if err := c.Reset(8); err != nil {
		panic(err)
	}
	buf := make([]byte, 8)
	p := []byte("hello, chunked world")
	for len(p) > 0 {
		if c.NeedsBuffer() || c.Full() {
			if c.Holding() {
				ch := c.Seal() // ch.Buf is ours again once ch.Data is sent
				fmt.Printf("chunk at %2d: %q crc32c %08x\n", ch.Offset, ch.Data, ch.CRC32C)
			}
			c.Attach(&buf)
		}
		p = p[c.Write(p):]
	}
	last, oneShot := c.Finish()
	fmt.Printf("last at %2d: %q crc32c %08x, one shot: %v\n", last.Offset, last.Data, last.CRC32C, oneShot)
	fmt.Printf("object: %d bytes, crc32c %08x\n", c.Size(), c.CRC32C())
	// Output:
	// chunk at  0: "hello, c" crc32c dad50fec
	// chunk at  8: "hunked w" crc32c 54a7f5c6
	// last at 16: "orld" crc32c 37120cd2, one shot: false
	// object: 20 bytes, crc32c 636d7d76
}

// The owner loop of a reader: Fill reads straight into the buffer, and reads
// one byte past a full chunk to learn whether the stream goes on. An object
// of exactly one chunk therefore stays in its first chunk: the one-shot case.
func ExampleChunker_Fill() {
	var c chunker.Chunker // reused for each object through Reset
	buf := make([]byte, 8)
	for _, object := range []string{"exactly8", "nine byte"} {
		if err := c.Reset(8, chunker.WithMD5()); err != nil {
			panic(err)
		}
		r := strings.NewReader(object)
		for {
			if c.NeedsBuffer() {
				if c.Holding() {
					ch := c.Seal()
					fmt.Printf("%q: chunk %q\n", object, ch.Data)
				}
				c.Attach(&buf)
			}
			_, err := c.Fill(r)
			if err == io.EOF {
				break
			}
			if err != nil {
				panic(err)
			}
		}
		last, oneShot := c.Finish()
		fmt.Printf("%q: last %q, one shot: %v, md5 %x\n", object, last.Data, oneShot, c.MD5())
	}
	// Output:
	// "exactly8": last "exactly8", one shot: true, md5 40c612d8f6814bf8ae51586066a77fc3
	// "nine byte": chunk "nine byt"
	// "nine byte": last "e", one shot: false, md5 b6c634378734548fc8b1bb0dfd6b5e4b
}

// A chunk longer than MaxPiece goes out in several write messages, each with
// its own CRC-32C, computed on the same single pass as the chunk's.
func ExampleChunk_PieceCRC32C() {
	const size = 5 << 20
	c, err := newChunker(size)
	if err != nil {
		panic(err)
	}
	buf := make([]byte, size)
	c.Attach(&buf)
	c.Write(bytes.Repeat([]byte("objup"), size/5))
	ch, _ := c.Finish()
	table := crc32.MakeTable(crc32.Castagnoli)
	for i := 0; i*chunker.MaxPiece < len(ch.Data); i++ {
		msg := ch.Data[i*chunker.MaxPiece : min((i+1)*chunker.MaxPiece, len(ch.Data))]
		fmt.Printf("message %d: %d bytes, crc32c %08x, right: %v\n",
			i, len(msg), ch.PieceCRC32C(i), ch.PieceCRC32C(i) == crc32.Checksum(msg, table))
	}
	// Output:
	// message 0: 2097152 bytes, crc32c a564a145, right: true
	// message 1: 2097152 bytes, crc32c 5b39eacb, right: true
	// message 2: 1048576 bytes, crc32c 3de9224b, right: true
}
