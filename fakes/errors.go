package fakes

import (
	"errors"
	"net/http"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/internal/httpcode"
)

// httpKindOf returns the HTTP status and JSON reason for err: its own for a
// *store.Error, else those of its gRPC code (httpcode.Status).
func httpKindOf(err error) (int, string) {
	var ae *store.Error
	if errors.As(err, &ae) {
		return ae.HTTP, ae.Reason
	}
	return httpcode.Status(status.Code(err))
}

// codeOfHTTP is the gRPC code the request log records for an HTTP status:
// the usual mapping, except that a 409 (a bucket that is not empty) is
// FailedPrecondition, as the gRPC API answers it.
func codeOfHTTP(st int) codes.Code {
	if st == http.StatusConflict {
		return codes.FailedPrecondition
	}
	return httpcode.Code(st)
}
