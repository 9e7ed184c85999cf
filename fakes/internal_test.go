package fakes

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestChunkReader(t *testing.T) {
	chunks := [][]byte{[]byte("hello"), nil, []byte(", "), []byte("world"), {}}
	const all = "hello, world"
	r := newChunkReader(chunks, int64(len(all)))
	got, err := io.ReadAll(r)
	if err != nil || string(got) != all {
		t.Fatalf("ReadAll = %q, %v", got, err)
	}
	for off := 0; off <= len(all)+1; off++ {
		if _, err := r.Seek(int64(off), io.SeekStart); err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(r)
		if want := all[min(off, len(all)):]; string(got) != want {
			t.Fatalf("after Seek(%d): %q, want %q", off, got, want)
		}
	}
	if p, _ := r.Seek(-3, io.SeekEnd); p != int64(len(all)-3) {
		t.Fatalf("Seek from end: %d", p)
	}
	if p, _ := r.Seek(1, io.SeekCurrent); p != int64(len(all)-2) {
		t.Fatalf("Seek from current: %d", p)
	}
	if _, err := r.Seek(-1, io.SeekStart); err == nil {
		t.Fatal("negative Seek accepted")
	}
	// Reads of one byte at a time cross chunk boundaries correctly.
	r.Seek(0, io.SeekStart)
	var out bytes.Buffer
	one := make([]byte, 1)
	for range 100 {
		n, err := r.Read(one)
		out.Write(one[:n])
		if err == io.EOF {
			break
		}
	}
	if out.String() != all {
		t.Fatalf("byte reads: %q", out.String())
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
