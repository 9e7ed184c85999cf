package store

import (
	"fmt"
	"strings"
)

// CheckBucketName applies the GCS bucket naming rules: 3 to 63 characters (up
// to 222 with dots, each dot-separated part at most 63), lowercase letters,
// digits, '-', '_' and '.', starting and ending with a letter or digit.
func CheckBucketName(name string) error {
	n := len(name)
	if n < 3 || n > 222 || (n > 63 && !strings.Contains(name, ".")) {
		return fmt.Errorf("bucket name %q: must have 3 to 63 characters (222 with dots)", name)
	}
	for _, part := range strings.Split(name, ".") {
		if len(part) == 0 || len(part) > 63 {
			return fmt.Errorf("bucket name %q: each dot-separated part must have 1 to 63 characters", name)
		}
	}
	for i := 0; i < n; i++ {
		c := name[i]
		alnum := 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
		switch {
		case alnum:
		case (i == 0 || i == n-1):
			return fmt.Errorf("bucket name %q: must start and end with a lowercase letter or digit", name)
		case c == '-' || c == '_' || c == '.':
		default:
			return fmt.Errorf("bucket name %q: byte %q at %d; only a-z, 0-9, '-', '_' and '.' are allowed", name, c, i)
		}
	}
	if strings.HasPrefix(name, "goog") {
		return fmt.Errorf("bucket name %q: must not start with \"goog\"", name)
	}
	return nil
}
