// Package httpcode maps the HTTP statuses of the GCS JSON API to gRPC codes
// and back, once for the project: the uploader classifies the errors of its
// JSON transport with it (Code); the fake records its JSON requests with it
// (Code), answers a gRPC code's error on the JSON API with it (Status), and
// fails a gRPC call with the code of a retry test's HTTP status (Answer).
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

// Status returns the HTTP status and the JSON API reason that stand for gRPC
// code c, the reverse of Code: InvalidArgument and DataLoss 400 "invalid",
// NotFound 404 "notFound", AlreadyExists and Aborted 409 "conflict",
// FailedPrecondition 412 "conditionNotMet", OutOfRange 416
// "requestedRangeNotSatisfiable", Unimplemented 501 "notImplemented",
// PermissionDenied 403 "forbidden", Unauthenticated 401 "required",
// ResourceExhausted 429 "rateLimitExceeded", Unavailable 503 "backendError",
// DeadlineExceeded 504 "backendError", Canceled 499 "canceled", and any other
// code 500 "backendError".
func Status(c codes.Code) (int, string) {
	switch c {
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

// Answer returns the gRPC code that answers, on the gRPC API, what the JSON
// API answers with HTTP status st: Code(st) where Status maps that code back
// to st (409 is Aborted, 500 Internal), else the code Status maps to st (504
// is DeadlineExceeded), else Unavailable for a 502. For any other status (a
// success, 408, 410, a status Code only classes) it returns false.
func Answer(st int) (codes.Code, bool) {
	c := Code(st)
	if c == codes.OK {
		return codes.Unknown, false
	}
	if s, _ := Status(c); s == st {
		return c, true
	}
	for d := codes.Code(1); d <= codes.Unauthenticated; d++ {
		if s, _ := Status(d); s == st {
			return d, true
		}
	}
	if st == http.StatusBadGateway {
		return codes.Unavailable, true
	}
	return codes.Unknown, false
}
