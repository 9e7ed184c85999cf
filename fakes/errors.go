package fakes

import (
	"errors"
	"fmt"
	"net/http"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/internal/httpcode"
)

// kind is a class of error with its gRPC code, its HTTP status and its JSON
// API reason, so that the store's errors read right on either API.
type kind struct {
	code   codes.Code
	http   int
	reason string
}

var (
	kindInvalid       = kind{codes.InvalidArgument, http.StatusBadRequest, "invalid"}
	kindNotFound      = kind{codes.NotFound, http.StatusNotFound, "notFound"}
	kindConflict      = kind{codes.FailedPrecondition, http.StatusConflict, "conflict"}
	kindPrecondition  = kind{codes.FailedPrecondition, http.StatusPreconditionFailed, "conditionNotMet"}
	kindNotModified   = kind{codes.FailedPrecondition, http.StatusNotModified, "notModified"}
	kindUnimplemented = kind{codes.Unimplemented, http.StatusNotImplemented, "notImplemented"}
	kindDataLoss      = kind{codes.DataLoss, http.StatusBadRequest, "invalid"}
	kindRange         = kind{codes.OutOfRange, http.StatusRequestedRangeNotSatisfiable, "requestedRangeNotSatisfiable"}
	kindInternal      = kind{codes.Internal, http.StatusInternalServerError, "backendError"}
)

// apiError is an error the fake returns to a client. Over gRPC it is a
// status with its code (GRPCStatus); over HTTP, a GCS JSON error with its
// status and reason.
type apiError struct {
	kind
	msg string
}

func newError(k kind, format string, args ...any) *apiError {
	return &apiError{kind: k, msg: fmt.Sprintf(format, args...)}
}

func (e *apiError) Error() string { return e.msg }

// GRPCStatus lets grpc-go and status.FromError see the error's code.
func (e *apiError) GRPCStatus() *status.Status { return status.New(e.code, e.msg) }

// newPrecondition is a failed precondition: HTTP 412, or 304 Not Modified
// for the *_not_match conditions, as GCS documents for the JSON API.
func newPrecondition(notMatch bool, format string, args ...any) *apiError {
	k := kindPrecondition
	if notMatch {
		k = kindNotModified
	}
	return newError(k, "precondition failed: "+format, args...)
}

func errBucketNotFound(name string) *apiError {
	return newError(kindNotFound, "bucket %q not found", name)
}

func errObjectNotFound(bucket, name string, gen int64) *apiError {
	if gen != 0 {
		return newError(kindNotFound, "object %q generation %d not found in bucket %q", name, gen, bucket)
	}
	return newError(kindNotFound, "object %q not found in bucket %q", name, bucket)
}

// httpKindOf returns the HTTP status and JSON reason for err: its own for an
// *apiError, else derived from its gRPC code.
func httpKindOf(err error) (int, string) {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.http, ae.reason
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
