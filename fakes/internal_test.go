package fakes

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestObjectContent(t *testing.T) {
	parts := [][]byte{[]byte("hello"), []byte(", "), []byte("world")}
	const all = "hello, world"
	o := &object{content: parts, size: int64(len(all))}
	if got := string(o.bytes()); got != all {
		t.Fatalf("bytes = %q", got)
	}
	for start := 0; start <= len(all); start++ {
		for end := start; end <= len(all); end++ {
			var buf bytes.Buffer
			if err := o.writeRange(&buf, int64(start), int64(end)); err != nil || buf.String() != all[start:end] {
				t.Fatalf("writeRange(%d, %d) = %q, %v", start, end, buf.String(), err)
			}
			b := make([]byte, end-start)
			if n := o.read(b, int64(start)); n != end-start || string(b) != all[start:end] {
				t.Fatalf("read(%d) of %d = %d %q", start, end-start, n, b)
			}
			if end == start {
				continue
			}
			// Parts are [0,5), [5,7) and [7,12).
			partEnd := 5
			if start >= 7 {
				partEnd = 12
			} else if start >= 5 {
				partEnd = 7
			}
			p := o.part(int64(start), int64(end-start))
			if (p != nil) != (end <= partEnd) || p != nil && string(p) != all[start:end] {
				t.Fatalf("part(%d, %d) = %q; the range ends at %d, its part at %d", start, end-start, p, end, partEnd)
			}
		}
	}
}

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
		if err := checkBucketName(name); (err == nil) != ok {
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
