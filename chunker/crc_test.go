package chunker_test

import (
	"math/rand/v2"
	"testing"

	"github.com/objup/objup/chunker"
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
			got := chunker.CombineCRC32C(crc32c(a), crc32c(b), int64(len(b)))
			if want := crc32c(data[:end]); got != want {
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
		crc = chunker.CombineCRC32C(crc, crc32c(data[off:off+n]), int64(n))
		off += n
	}
	if want := crc32c(data); crc != want {
		t.Fatalf("folded CRC32C %08x, want %08x", crc, want)
	}
}

func TestCombineCRC32CEdgeCases(t *testing.T) {
	crc1 := crc32c([]byte("hello"))
	if got := chunker.CombineCRC32C(crc1, 0, 0); got != crc1 {
		t.Errorf("combine with an empty piece = %08x, want %08x", got, crc1)
	}
	if got := chunker.CombineCRC32C(crc1, 12345, -7); got != crc1 {
		t.Errorf("combine with a negative length = %08x, want %08x", got, crc1)
	}
	if got, want := chunker.CombineCRC32C(0, crc32c([]byte("world")), 5), crc32c([]byte("world")); got != want {
		t.Errorf("combine after an empty prefix = %08x, want %08x", got, want)
	}
	// The known check value of CRC-32C: "123456789" -> e3069283.
	got := chunker.CombineCRC32C(crc32c([]byte("1234")), crc32c([]byte("56789")), 5)
	if got != 0xe3069283 {
		t.Errorf("combined check value = %08x, want e3069283", got)
	}
}
