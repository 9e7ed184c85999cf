package fakes

import (
	"errors"
	"net/http"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/internal/httpcode"
)

// httpKindOf returns the HTTP status and JSON reason for err: its own for an
// *apiError, else derived from its gRPC code.
func httpKindOf(err error) (int, string) {
	var ae *store.Error
	if errors.As(err, &ae) {
		return ae.HTTP, ae.Reason
	}
	switch status.Code(err) {
	case codes.InvalidArgument, codes.DataLoss:
		return http.StatusBadRequest, "invalid"
	case codes.NotFound:
		return http.StatusNotFound, "notFound"
	case codes.AlreadyExists, codes.Aborted:
		return http.StatusConflict, "conflict"
	case codes.FailedPrecondition:
		return http.StatusPreconditionFailed, "conditionNotMet"
	case codes.OutOfRange:
		return http.StatusRequestedRangeNotSatisfiable, "requestedRangeNotSatisfiable"
	case codes.Unimplemented:
		return http.StatusNotImplemented, "notImplemented"
	case codes.PermissionDenied:
		return http.StatusForbidden, "forbidden"
	case codes.Unauthenticated:
		return http.StatusUnauthorized, "required"
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests, "rateLimitExceeded"
	case codes.Unavailable:
		return http.StatusServiceUnavailable, "backendError"
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout, "backendError"
	case codes.Canceled:
		return 499, "canceled"
	}
	return http.StatusInternalServerError, "backendError"
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
