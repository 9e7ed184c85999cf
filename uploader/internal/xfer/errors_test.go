package xfer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestCodeOf: every cause a mode meets has the code the uploader's
// errors report.
func TestCodeOf(t *testing.T) {
	tgt := &Target{Bucket: "b", Object: "o"}
	for _, tc := range []struct {
		name string
		err  error
		want codes.Code
	}{
		{"nil", nil, codes.OK},
		{"status", status.Error(codes.ResourceExhausted, "slow down"), codes.ResourceExhausted},
		{"canceled", fmt.Errorf("wait: %w", context.Canceled), codes.Canceled},
		{"deadline", context.DeadlineExceeded, codes.DeadlineExceeded},
		{"broken stream", fmt.Errorf("recv: %w", io.ErrUnexpectedEOF), codes.Unavailable},
		{"op error of a status", Fail(tgt, "WriteObject", status.Error(codes.NotFound, "no bucket")), codes.NotFound},
		{"op error with its own code", &OpError{Op: "Close", Code: codes.DataLoss, Err: errors.New("size")}, codes.DataLoss},
		{"wrapped op error", fmt.Errorf("part 1: %w", Fail(tgt, "Query", context.Canceled)), codes.Canceled},
		{"other", errors.New("boom"), codes.Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CodeOf(tc.err); got != tc.want {
				t.Fatalf("CodeOf(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// TestFail: the operation that failed first names the failure, a lost
// first open of an appendable object leaves the outcome unknown, and the
// text is that of the uploader's errors.
func TestFail(t *testing.T) {
	tgt := &Target{Bucket: "b", Object: "dir/\x00o"}
	if Fail(tgt, "X", nil) != nil {
		t.Fatal("Fail of nil is not nil")
	}
	first := Fail(tgt, "StartResumableWrite", status.Error(codes.Unavailable, "down"))
	if got := Fail(tgt, "BidiWriteObject", fmt.Errorf("resume: %w", first)); got != first {
		t.Fatalf("Fail of a wrapped OpError = %v, want the OpError itself", got)
	}
	lost := Fail(tgt, "BidiWriteObject", ErrFirstOpenLost)
	if !lost.Unknown || !Unknown(fmt.Errorf("x: %w", lost)) {
		t.Fatalf("lost first open: Unknown = %v, want true", lost.Unknown)
	}
	if Unknown(first) {
		t.Fatal("a known failure reports an unknown outcome")
	}
	want := `objup: StartResumableWrite gs://b/"dir/\x00o": rpc error: code = Unavailable desc = down`
	if got := first.Error(); got != want {
		t.Fatalf("text %q, want %q", got, want)
	}
}
