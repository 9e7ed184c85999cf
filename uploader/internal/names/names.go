package names

import (
	"fmt"
	"net/netip"
	"strings"
	"unicode/utf8"
)

// Bucket reports whether name is a valid GCS bucket name: 3 to 222
// characters of lowercase letters, digits, '-', '_' and '.', starting and
// ending with a letter or digit, dot-separated parts of at most 63
// characters, not an IP address and not starting with "goog".
func Bucket(name string) error {
	n := len(name)
	if n < 3 || n > 222 {
		return fmt.Errorf("bucket name %q must have 3 to 222 characters", name)
	}
	for i := 0; i < n; i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' || c == '_' || c == '.':
			if i == 0 || i == n-1 {
				return fmt.Errorf("bucket name %q must start and end with a letter or digit", name)
			}
		default:
			return fmt.Errorf("bucket name %q has %q: only lowercase letters, digits, '-', '_' and '.' are allowed", name, c)
		}
	}
	ipLike := true // only digits and dots: maybe an IPv4 address
	for part := range strings.SplitSeq(name, ".") {
		if len(part) == 0 || len(part) > 63 {
			return fmt.Errorf("bucket name %q: each dot-separated part must have 1 to 63 characters", name)
		}
		ipLike = ipLike && strings.Trim(part, "0123456789") == ""
	}
	if ipLike {
		if _, err := netip.ParseAddr(name); err == nil {
			return fmt.Errorf("bucket name %q must not be an IP address", name)
		}
	}
	if strings.HasPrefix(name, "goog") {
		return fmt.Errorf("bucket name %q must not start with \"goog\"", name)
	}
	return nil
}

// Object reports whether name is a valid GCS object name: 1 to 1024
// bytes of UTF-8 without carriage return or line feed, not "." or "..", and
// not under ".well-known/acme-challenge/".
func Object(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("object name is empty")
	case len(name) > 1024:
		return fmt.Errorf("object name has %d bytes, more than 1024", len(name))
	case !utf8.ValidString(name):
		return fmt.Errorf("object name %q is not valid UTF-8", name)
	case name == "." || name == "..":
		return fmt.Errorf("object name %q is not allowed", name)
	case strings.HasPrefix(name, ".well-known/acme-challenge/"):
		return fmt.Errorf("object name %q must not start with .well-known/acme-challenge/", name)
	case strings.ContainsAny(name, "\r\n"):
		return fmt.Errorf("object name %q contains a carriage return or line feed", name)
	}
	return nil
}
