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

func TestStatus(t *testing.T) {
	for c := codes.Code(0); c <= codes.Unauthenticated; c++ {
		st, reason := httpcode.Status(c)
		if st < 400 || reason == "" {
			t.Errorf("Status(%v) = %d, %q", c, st, reason)
		}
		switch c {
		case codes.OK, codes.Unknown, codes.Internal, codes.DataLoss, codes.AlreadyExists, codes.DeadlineExceeded:
		default:
			if got := httpcode.Code(st); got != c {
				t.Errorf("Code(Status(%v)) = %v", c, got)
			}
		}
	}
}

func TestAnswer(t *testing.T) {
	want := map[int]codes.Code{
		400: codes.InvalidArgument, 401: codes.Unauthenticated, 403: codes.PermissionDenied,
		404: codes.NotFound, 409: codes.Aborted, 412: codes.FailedPrecondition,
		416: codes.OutOfRange, 429: codes.ResourceExhausted, 499: codes.Canceled,
		500: codes.Internal, 501: codes.Unimplemented, 502: codes.Unavailable,
		503: codes.Unavailable, 504: codes.DeadlineExceeded,
	}
	for st := 100; st < 600; st++ {
		got, ok := httpcode.Answer(st)
		w, wok := want[st]
		if ok != wok || got != w && wok {
			t.Errorf("Answer(%d) = %v, %v; want %v, %v", st, got, ok, w, wok)
		}
	}
}
