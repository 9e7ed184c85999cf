package store

import (
	"fmt"
	"net/http"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Kind is a class of error with its gRPC code, its HTTP status and its JSON
// API reason, so that the store's errors read right on either API.
type Kind struct {
	Code   codes.Code
	HTTP   int
	Reason string
}

var (
	KindInvalid      = Kind{codes.InvalidArgument, http.StatusBadRequest, "invalid"}
	KindNotFound     = Kind{codes.NotFound, http.StatusNotFound, "notFound"}
	KindConflict     = Kind{codes.FailedPrecondition, http.StatusConflict, "conflict"}
	KindPrecondition = Kind{codes.FailedPrecondition, http.StatusPreconditionFailed, "conditionNotMet"}
	// KindFailedPrecondition is a request the resource's state does not
	// allow, whatever its preconditions: HTTP 400.
	KindFailedPrecondition = Kind{codes.FailedPrecondition, http.StatusBadRequest, "failedPrecondition"}
	KindNotModified        = Kind{codes.FailedPrecondition, http.StatusNotModified, "notModified"}
	KindUnimplemented      = Kind{codes.Unimplemented, http.StatusNotImplemented, "notImplemented"}
	KindDataLoss           = Kind{codes.DataLoss, http.StatusBadRequest, "invalid"}
	KindRange              = Kind{codes.OutOfRange, http.StatusRequestedRangeNotSatisfiable, "requestedRangeNotSatisfiable"}
	KindInternal           = Kind{codes.Internal, http.StatusInternalServerError, "backendError"}
	KindRateLimited        = Kind{codes.ResourceExhausted, http.StatusTooManyRequests, "rateLimitExceeded"}
	KindUnavailable        = Kind{codes.Unavailable, http.StatusServiceUnavailable, "backendError"}
)

// Error is an error the fake returns to a client. Over gRPC it is a
// status with its code (GRPCStatus); over HTTP, a GCS JSON error with its
// status and reason.
type Error struct {
	Kind
	Msg string
	// Domain is the JSON error's domain; "" means "global".
	Domain string
}

// Errorf returns an error of kind k with a formatted message.
func Errorf(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, args...)}
}

// Error returns the message.
func (e *Error) Error() string { return e.Msg }

// GRPCStatus lets grpc-go and status.FromError see the error's code.
func (e *Error) GRPCStatus() *status.Status { return status.New(e.Code, e.Msg) }

// NewPrecondition is a failed precondition: HTTP 412, or 304 Not Modified
// for the *_not_match conditions, as GCS documents for the JSON API.
func NewPrecondition(notMatch bool, format string, args ...any) *Error {
	k := KindPrecondition
	if notMatch {
		k = KindNotModified
	}
	return Errorf(k, "precondition failed: "+format, args...)
}

// ErrBucketNotFound is the error for a missing bucket.
func ErrBucketNotFound(name string) *Error {
	return Errorf(KindNotFound, "bucket %q not found", name)
}

// ErrObjectNotFound is the error for a missing object, or generation if
// gen != 0.
func ErrObjectNotFound(bucket, name string, gen int64) *Error {
	if gen != 0 {
		return Errorf(KindNotFound, "object %q generation %d not found in bucket %q", name, gen, bucket)
	}
	return Errorf(KindNotFound, "object %q not found in bucket %q", name, bucket)
}
