// Package crc32c is objup's one implementation of CRC-32C (Castagnoli) as GCS
// uses it: a checksum over bytes, and the combine that derives the checksum
// of A+B from those of A and B without reading either. The chunker, the
// uploader and the fake share it, so there is one combine with one set of
// table assumptions.
package crc32c

import (
	"hash/crc32"
	"sync/atomic"
)

// Table is the CRC-32C table; hash/crc32 uses the CPU's CRC32 instructions for
// it where available. Code that must not be counted by Counting (the fake's
// server side) checksums with crc32.Checksum(b, Table) directly.
var Table = crc32.MakeTable(crc32.Castagnoli)

// castagnoliReversed is the Castagnoli polynomial in the bit-reversed form
// that hash/crc32 computes with.
const castagnoliReversed = 0x82f63b78

var (
	counting atomic.Bool
	counted  atomic.Int64
)

// Checksum returns the CRC-32C of b. It is the checksum the SDK runs over
// payload bytes, so a test can count them (see Counting).
func Checksum(b []byte) uint32 {
	if counting.Load() {
		counted.Add(int64(len(b)))
	}
	return crc32.Checksum(b, Table)
}

// Counting turns on counting of the bytes that pass through Checksum and
// returns a function that turns it off again and reports how many bytes were
// checksummed in between. It exists for tests that prove each payload byte is
// checksummed once; calls must not overlap.
func Counting() (stop func() int64) {
	counted.Store(0)
	counting.Store(true)
	return func() int64 {
		counting.Store(false)
		return counted.Swap(0)
	}
}

// Combine returns the CRC-32C of the concatenation A+B, given crc1 =
// CRC-32C(A), crc2 = CRC-32C(B) and len2 = len(B). It costs O(log len2) and
// does not look at the data. A negative or zero len2 returns crc1.
//
// This is zlib's crc32_combine: appending len2 bytes multiplies crc1 by
// x^(8*len2) modulo the polynomial, in GF(2).
func Combine(crc1, crc2 uint32, len2 int64) uint32 {
	if len2 <= 0 {
		return crc1
	}
	if crc1 == 0 {
		// x^(8*len2) * 0 is 0: the first piece of an object costs nothing.
		return crc2
	}
	return multModP(x2nModP(uint64(len2), 3), crc1) ^ crc2
}

// multModP returns a*b modulo the polynomial; both operands are reflected
// (bit 31 holds the coefficient of x^0).
func multModP(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
			if a&(m-1) == 0 {
				break
			}
		}
		if b&1 != 0 {
			b = b>>1 ^ castagnoliReversed
		} else {
			b >>= 1
		}
	}
	return p
}

// x2nTable[k] is x^(2^k) modulo the polynomial, for every k that x2nModP can
// reach (k up to 3+63), so no periodicity of the powers is assumed.
var x2nTable = func() (t [67]uint32) {
	p := uint32(1) << 30 // x^1
	t[0] = p
	for k := 1; k < len(t); k++ {
		p = multModP(p, p)
		t[k] = p
	}
	return t
}()

// x2nModP returns x^(n * 2^k) modulo the polynomial.
func x2nModP(n uint64, k uint) uint32 {
	p := uint32(1) << 31 // x^0
	for ; n != 0; n >>= 1 {
		if n&1 != 0 {
			p = multModP(x2nTable[k], p)
		}
		k++
	}
	return p
}
