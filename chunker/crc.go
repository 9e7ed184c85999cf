package chunker

import "github.com/objup/objup/internal/crc32c"

// CombineCRC32C returns the CRC-32C (Castagnoli, as crc32.Checksum computes
// it) of the concatenation A+B, given crc1 = CRC-32C(A), crc2 = CRC-32C(B) and
// len2 = len(B). It costs O(log len2) and does not look at the data. A
// negative len2 is treated as 0 and returns crc1.
func CombineCRC32C(crc1, crc2 uint32, len2 int64) uint32 {
	return crc32c.Combine(crc1, crc2, len2)
}
