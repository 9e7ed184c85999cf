package httpcode_test

import (
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/internal/httpcode"
)

func TestCode(t *testing.T) {
	for status, want := range map[int]codes.Code{
		200: codes.OK, 308: codes.OK,
		400: codes.InvalidArgument, 401: codes.Unauthenticated, 403: codes.PermissionDenied,
		404: codes.NotFound, 410: codes.NotFound, 408: codes.DeadlineExceeded, 409: codes.Aborted,
		412: codes.FailedPrecondition, 416: codes.OutOfRange, 418: codes.InvalidArgument,
		429: codes.ResourceExhausted, 499: codes.Canceled, 500: codes.Internal, 501: codes.Unimplemented,
		502: codes.Unavailable, 503: codes.Unavailable, 504: codes.Unavailable, 507: codes.Internal,
	} {
		if got := httpcode.Code(status); got != want {
			t.Errorf("Code(%d) = %v, want %v", status, got, want)
		}
	}
}
