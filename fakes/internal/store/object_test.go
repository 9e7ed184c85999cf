package store

import (
	"bytes"
	"testing"
)

func TestObjectContent(t *testing.T) {
	parts := [][]byte{[]byte("hello"), []byte(", "), []byte("world")}
	const all = "hello, world"
	o := &Object{content: parts, size: int64(len(all))}
	if got := string(o.Bytes()); got != all {
		t.Fatalf("bytes = %q", got)
	}
	for start := 0; start <= len(all); start++ {
		for end := start; end <= len(all); end++ {
			var buf bytes.Buffer
			if err := o.WriteRange(&buf, int64(start), int64(end)); err != nil || buf.String() != all[start:end] {
				t.Fatalf("writeRange(%d, %d) = %q, %v", start, end, buf.String(), err)
			}
			b := make([]byte, end-start)
			if n := o.Read(b, int64(start)); n != end-start || string(b) != all[start:end] {
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
			p := o.Part(int64(start), int64(end-start))
			if (p != nil) != (end <= partEnd) || p != nil && string(p) != all[start:end] {
				t.Fatalf("part(%d, %d) = %q; the range ends at %d, its part at %d", start, end-start, p, end, partEnd)
			}
		}
	}
}
