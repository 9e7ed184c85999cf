package api

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestCheckObjectName(t *testing.T) {
	for name, ok := range map[string]bool{
		"":                              false,
		".":                             false,
		"..":                            false,
		"a\nb":                          false,
		"a\rb":                          false,
		"\xff":                          false,
		".well-known/acme-challenge/":   false,
		".well-known/acme-challenge/ab": false,
		strings.Repeat("é", 513):        false, // 1026 bytes
		strings.Repeat("é", 512):        true,  // 1024 bytes
		"...":                           true,
		"./a":                           true,
		"a b/c\td":                      true,
	} {
		err := CheckObjectName(name)
		if (err == nil) != ok {
			t.Errorf("CheckObjectName(%.20q) = %v, want ok=%v", name, err, ok)
		}
		if err != nil && status.Code(err) != codes.InvalidArgument {
			t.Errorf("CheckObjectName(%.20q): code %v", name, status.Code(err))
		}
	}
}

func TestParseBucket(t *testing.T) {
	for res, want := range map[string]string{
		"projects/_/buckets/b":      "b",
		"projects/123/buckets/b-1":  "b-1",
		"b":                         "",
		"projects/_/buckets/":       "",
		"projects//buckets/b":       "",
		"projects/_/buckets/b/o":    "",
		"projects/a/b/buckets/b":    "",
		"organizations/_/buckets/b": "",
	} {
		got, err := ParseBucket(res)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("ParseBucket(%q) = %q, %v; want %q", res, got, err, want)
		}
	}
}
