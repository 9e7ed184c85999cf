package fakes

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes/internal/store"
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
		err := checkObjectName(name)
		if (err == nil) != ok {
			t.Errorf("checkObjectName(%.20q) = %v, want ok=%v", name, err, ok)
		}
		if err != nil && status.Code(err) != codes.InvalidArgument {
			t.Errorf("checkObjectName(%.20q): code %v", name, status.Code(err))
		}
	}
}

func TestCheckBucketName(t *testing.T) {
	for name, ok := range map[string]bool{
		"abc":                          true,
		"a-b_c.d":                      true,
		"0ab":                          true,
		strings.Repeat("a", 63):        true,
		strings.Repeat("a", 64):        false,
		strings.Repeat("a.", 40) + "a": true,
		"ab":                           false,
		"Abc":                          false,
		"-ab":                          false,
		"ab-":                          false,
		"a..b":                         false,
		"a/b":                          false,
		"goog-x":                       false,
		"projects/_/buckets/abc":       false,
	} {
		if err := store.CheckBucketName(name); (err == nil) != ok {
			t.Errorf("checkBucketName(%q) = %v, want ok=%v", name, err, ok)
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
		got, err := parseBucket(res)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("parseBucket(%q) = %q, %v; want %q", res, got, err, want)
		}
	}
}
