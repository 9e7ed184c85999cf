package store

import (
	"bytes"
	"encoding/binary"
)

// The Pebble keys of a store on disk; disk.go describes their layout.

var genKey = []byte("G")

func bucketKey(name string) []byte { return []byte("B" + name) }

// objPrefix is the prefix of the keys of bucket's objects.
func objPrefix(bucket string) []byte { return []byte("O" + bucket + "\x00") }

// appendName appends name, escaped and terminated, to k.
func appendName(k []byte, name string) []byte {
	for i := 0; i < len(name); i++ {
		k = append(k, name[i])
		if name[i] == 0 {
			k = append(k, 0xff)
		}
	}
	return append(k, 0, 1)
}

// objKey is the key of generation gen of name in bucket.
func objKey(bucket, name string, gen int64) []byte {
	k := appendName(objPrefix(bucket), name)
	return binary.BigEndian.AppendUint64(k, uint64(gen))
}

// parseObjKey returns the name and generation of an object key whose
// bucket prefix is n bytes long.
func parseObjKey(k []byte, n int) (string, int64, bool) {
	k = k[n:]
	var name []byte
	for i := 0; i < len(k); i++ {
		if k[i] != 0 {
			continue
		}
		if i+1 < len(k) && k[i+1] == 0xff {
			name = append(name, k[:i+1]...)
			k = k[i+2:]
			i = -1
			continue
		}
		name = append(name, k[:i]...)
		if i+2+8 != len(k) || k[i+1] != 1 {
			return "", 0, false
		}
		return string(name), int64(binary.BigEndian.Uint64(k[i+2:])), true
	}
	return "", 0, false
}

func usageKey(bucket, tenant string) []byte { return []byte("U" + bucket + "\x00" + tenant) }

// prefixUpper is the smallest key above every key that starts with p.
func prefixUpper(p []byte) []byte {
	u := bytes.Clone(p)
	for i := len(u) - 1; i >= 0; i-- {
		if u[i] < 0xff {
			u[i]++
			return u[:i+1]
		}
	}
	return nil
}
