package header

import (
	"fmt"
	"strings"
)

// checkPair reports why gRPC would refuse, or reserves, the pair key, value.
// It implements the rules documented on AppendChecked.
func checkPair(key, value string) error {
	if key == "" {
		return fmt.Errorf("empty key")
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; !keyByte(c) {
			return fmt.Errorf("key %s has byte %#02x at %d; keys take the bytes 0-9 a-z A-Z and \"-_.\"", quote(key), c, i)
		}
	}
	if len(key) >= 5 && strings.EqualFold(key[:5], "grpc-") {
		return fmt.Errorf("key %s: keys starting with grpc- are reserved by gRPC", quote(key))
	}
	if len(key) >= 4 && strings.EqualFold(key[len(key)-4:], "-bin") {
		return nil // binary value: any bytes
	}
	for i := 0; i < len(value); i++ {
		switch c := value[i]; {
		case c == '\r' || c == '\n':
			return fmt.Errorf("value of key %s has a CR or LF at byte %d", quote(key), i)
		case c < 0x20 || c == 0x7f:
			return fmt.Errorf("value of key %s has control character %#02x at byte %d", quote(key), c, i)
		case c > 0x7f:
			return fmt.Errorf("value of key %s has non-ASCII byte %#02x at byte %d; binary values need a key ending in -bin", quote(key), c, i)
		}
	}
	return nil
}

// keyByte reports whether c may appear in a key: gRPC's 0-9 a-z - _ . plus
// A-Z, which is lower-cased.
func keyByte(c byte) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || 'A' <= c && c <= 'Z'
}

// quote quotes s for an error message, cut to 64 bytes.
func quote(s string) string {
	const limit = 64
	if len(s) > limit {
		return fmt.Sprintf("%q...", s[:limit])
	}
	return fmt.Sprintf("%q", s)
}
