package uploader

import (
	"testing"
	"unsafe"
)

// TestWriterFitsItsSizeClass guards a small upload's memory: a Writer holds
// every per-upload request message, so it is one allocation, and it must stay
// within the 1536-byte size class (with the 8-byte header Go puts on a
// pointerful object over 512 bytes). A few more fields would put it in the
// 1792-byte class, 256 bytes more per upload.
func TestWriterFitsItsSizeClass(t *testing.T) {
	const limit = 1536 - 8
	if n := unsafe.Sizeof(Writer{}); n > limit {
		t.Fatalf("Writer is %d bytes, over %d: shrink it (or accept the next size class and update this test with the measured B/op)", n, limit)
	}
}
