package crc32c

import (
	"math/rand/v2"
	"testing"
)

// TestX2nModPExponents checks x^(8a) * x^(8b) == x^(8(a+b)) for lengths far
// beyond what can be checksummed in a test, so the table is right for every
// power that Combine can reach.
func TestX2nModPExponents(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 2000 {
		a := rng.Uint64() >> (1 + rng.IntN(63))
		b := rng.Uint64() >> (1 + rng.IntN(63))
		if a+b < a || a+b > 1<<63-1 {
			continue
		}
		got := multModP(x2nModP(a, 3), x2nModP(b, 3))
		if want := x2nModP(a+b, 3); got != want {
			t.Fatalf("x^8a * x^8b != x^8(a+b) for a=%d b=%d: %08x vs %08x", a, b, got, want)
		}
	}
	// x^(8n) with the multiplier built by repeated multiplication by x^8.
	x8 := x2nModP(1, 3)
	p := uint32(1) << 31
	for n := range uint64(5000) {
		if got := x2nModP(n, 3); got != p {
			t.Fatalf("x^(8*%d) = %08x, want %08x", n, got, p)
		}
		p = multModP(p, x8)
	}
	// Lengths up to the int64 limit work.
	_ = Combine(1, 2, 1<<63-1)
}
