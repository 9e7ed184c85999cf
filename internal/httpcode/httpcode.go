// Package httpcode maps the HTTP statuses of the GCS JSON API to gRPC codes,
// once for the project: the uploader classifies the errors of its JSON
// transport with it, and the fake records its JSON requests with it.
package httpcode

import (
	"net/http"

	"google.golang.org/grpc/codes"
)

// Code returns the gRPC code an HTTP error status of the JSON API stands for,
// as google.rpc.Code documents the mapping: 400 InvalidArgument, 401
// Unauthenticated, 403 PermissionDenied, 404 and 410 NotFound, 408
// DeadlineExceeded, 409 Aborted, 412 FailedPrecondition, 416 OutOfRange, 429
// ResourceExhausted, 499 Canceled, 501 Unimplemented, 502, 503 and 504
// Unavailable, other 5xx Internal, and other 4xx InvalidArgument. A status
// below 400 is codes.OK. Callers add what their context knows (a 304 that
// answers a precondition, a 400 that reports a checksum mismatch).
func Code(status int) codes.Code {
	switch status {
	case http.StatusBadRequest:
		return codes.InvalidArgument
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusForbidden:
		return codes.PermissionDenied
	case http.StatusNotFound, http.StatusGone:
		return codes.NotFound
	case http.StatusRequestTimeout:
		return codes.DeadlineExceeded
	case http.StatusConflict:
		return codes.Aborted
	case http.StatusPreconditionFailed:
		return codes.FailedPrecondition
	case http.StatusRequestedRangeNotSatisfiable:
		return codes.OutOfRange
	case http.StatusTooManyRequests:
		return codes.ResourceExhausted
	case 499:
		return codes.Canceled
	case http.StatusNotImplemented:
		return codes.Unimplemented
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return codes.Unavailable
	}
	switch {
	case status < 400:
		return codes.OK
	case status < 500:
		return codes.InvalidArgument
	}
	return codes.Internal
}
