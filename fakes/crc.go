package fakes

import "hash/crc32"

// castagnoli is the CRC32C table (hardware-accelerated where available).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crc32cPoly is the reflected CRC32C polynomial.
const crc32cPoly = 0x82f63b78

// x2n[k] is x^(2^k) modulo the CRC32C polynomial (reflected bit order).
var x2n = func() (t [32]uint32) {
	p := uint32(1) << 30 // x^1
	for k := range t {
		t[k] = p
		p = multModP(p, p)
	}
	return t
}()

// multModP returns a(x)·b(x) modulo the CRC32C polynomial; a must not be 0.
func multModP(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; ; m >>= 1 {
		if a&m != 0 {
			p ^= b
			if a&(m-1) == 0 {
				return p
			}
		}
		if b&1 != 0 {
			b = b>>1 ^ crc32cPoly
		} else {
			b >>= 1
		}
	}
}

// xPow8n returns x^(8n) modulo the CRC32C polynomial.
func xPow8n(n int64) uint32 {
	p := uint32(1) << 31 // x^0
	for k := 3; n != 0; n, k = n>>1, k+1 {
		if n&1 != 0 {
			p = multModP(x2n[k&31], p)
		}
	}
	return p
}

// crc32cCombine returns the CRC32C of A followed by B, given crcA = CRC32C(A),
// crcB = CRC32C(B) and lenB = len(B), without reading either: the standard
// combine in GF(2), O(log lenB). It spares a second pass over each message
// whose CRC32C the server computed to check it.
func crc32cCombine(crcA, crcB uint32, lenB int64) uint32 {
	if lenB <= 0 {
		return crcA
	}
	return multModP(xPow8n(lenB), crcA) ^ crcB
}
