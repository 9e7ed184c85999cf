package crc32c_test

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/objup/objup/internal/crc32c"
)

func TestCombineCRC32C(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	data := pattern(1<<20+13, 5)
	cuts := []int{0, 1, 2, 3, 4, 7, 8, 255, 256, 4096, 65535, 1 << 20, len(data)}
	for range 30 {
		cuts = append(cuts, rng.IntN(len(data)+1))
	}
	for _, cut := range cuts {
		for _, end := range []int{cut, min(cut+1, len(data)), len(data), cut + (len(data)-cut)/3} {
			a, b := data[:cut], data[cut:end]
			got := crc32c.Combine(direct(a), direct(b), int64(len(b)))
			if want := direct(data[:end]); got != want {
				t.Fatalf("Combine(crc(%d bytes), crc(%d bytes)) = %08x, want %08x", len(a), len(b), got, want)
			}
		}
	}
}

func TestCombineCRC32CMany(t *testing.T) {
	// Folding many pieces of random sizes, as the chunker does.
	rng := rand.New(rand.NewPCG(5, 6))
	data := pattern(300_000, 11)
	var crc uint32
	for off := 0; off < len(data); {
		n := min(len(data)-off, rng.IntN(20_000))
		crc = crc32c.Combine(crc, direct(data[off:off+n]), int64(n))
		off += n
	}
	if want := direct(data); crc != want {
		t.Fatalf("folded CRC32C %08x, want %08x", crc, want)
	}
}

func TestCombineCRC32CEdgeCases(t *testing.T) {
	crc1 := direct([]byte("hello"))
	if got := crc32c.Combine(crc1, 0, 0); got != crc1 {
		t.Errorf("combine with an empty piece = %08x, want %08x", got, crc1)
	}
	if got := crc32c.Combine(crc1, 12345, -7); got != crc1 {
		t.Errorf("combine with a negative length = %08x, want %08x", got, crc1)
	}
	if got, want := crc32c.Combine(0, direct([]byte("world")), 5), direct([]byte("world")); got != want {
		t.Errorf("combine after an empty prefix = %08x, want %08x", got, want)
	}
	// The known check value of CRC-32C: "123456789" -> e3069283.
	got := crc32c.Combine(direct([]byte("1234")), direct([]byte("56789")), 5)
	if got != 0xe3069283 {
		t.Errorf("combined check value = %08x, want e3069283", got)
	}
}

// direct is a plain CRC-32C over b, the reference the combine is checked against.
func direct(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }

// pattern returns n pseudo-random bytes from seed.
func pattern(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func TestChecksumCounting(t *testing.T) {
	data := pattern(1000, 1)
	stop := crc32c.Counting()
	if got, want := crc32c.Checksum(data), direct(data); got != want {
		t.Fatalf("Checksum = %08x, want %08x", got, want)
	}
	crc32c.Checksum(data[:10])
	if n := stop(); n != 1010 {
		t.Fatalf("counted %d bytes, want 1010", n)
	}
	crc32c.Checksum(data)
	if n := crc32c.Counting()(); n != 0 {
		t.Fatalf("counted %d bytes while off, want 0", n)
	}
}
