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

// TestSuccessCodeAllocatesNothing guards a small upload's allocations:
// every upload's end is recorded with the code of its error (codeOf, which
// telemetry calls), and a success must cost nothing there. A check of the
// error's chain before the nil case once added an allocation to every
// upload.
func TestSuccessCodeAllocatesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = codeOf(nil) }); n != 0 {
		t.Fatalf("codeOf(nil) allocates %v times, want 0", n)
	}
}
