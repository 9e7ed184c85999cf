package httpfront

import (
	"encoding/base64"
	"encoding/binary"
)

// encodeCRC32C is fake-gcs-server's (and the JSON API's) form of a CRC32C:
// base64 of its 4 big-endian bytes.
func encodeCRC32C(c uint32) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], c)
	return base64.StdEncoding.EncodeToString(b[:])
}

func decodeCRC32C(s string) (uint32, bool) {
	var b [4]byte
	if base64.StdEncoding.EncodedLen(4) != len(s) {
		return 0, false
	}
	if n, err := base64.StdEncoding.Decode(b[:], []byte(s)); err != nil || n != 4 {
		return 0, false
	}
	return binary.BigEndian.Uint32(b[:]), true
}
