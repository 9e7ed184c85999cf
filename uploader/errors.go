package uploader

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/objup/objup/uploader/internal/xfer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Error is the error of every failed objup call. It names the operation and the
// object, carries a gRPC code, and wraps the cause: a gRPC status error from the
// service (so status.FromError and status.Code work on it), a context error, or a
// local validation error.
//
// Check a class of failure with CodeOf (codes.FailedPrecondition for a
// precondition that failed, codes.DataLoss for a checksum mismatch,
// codes.InvalidArgument for input refused before anything was sent) or
// IsOutcomeUnknown; errors.As(err, &*Error) gives the details.
type Error struct {
	// Op is the operation that failed: "NewWriter", "WriteObject",
	// "StartResumableWrite", "BidiWriteObject", "QueryWriteStatus", "Write" ...
	Op string
	// Bucket and Object name the object, when known.
	Bucket, Object string
	// Code classifies the failure with the gRPC codes. Local validation errors
	// have codes.InvalidArgument; context errors have codes.Canceled or
	// codes.DeadlineExceeded.
	Code codes.Code
	// Err is the cause.
	Err error

	// unknown says that the object may have been stored although the
	// upload failed: see IsOutcomeUnknown.
	unknown bool
}

// Error implements error. Names that are not valid UTF-8 or hold control
// characters are quoted with Go escapes, so the text is always valid UTF-8
// and one line.
func (e *Error) Error() string { return xfer.ErrorText(e.Op, e.Bucket, e.Object, e.unknown, e.Err) }

const invalidCode = codes.InvalidArgument

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is match the standard sentinels for the common cases:
// fs.ErrNotExist for codes.NotFound (a missing bucket, or a resumable
// session the service no longer knows), fs.ErrPermission for
// codes.PermissionDenied and codes.Unauthenticated. context.Canceled and
// context.DeadlineExceeded match through the cause.
func (e *Error) Is(target error) bool {
	switch target {
	case fs.ErrNotExist:
		return e.Code == codes.NotFound
	case fs.ErrPermission:
		return e.Code == codes.PermissionDenied || e.Code == codes.Unauthenticated
	}
	return false
}

// CodeOf returns the gRPC code of err: codes.OK for nil, the Code of an
// *Error in err's chain, codes.Canceled or codes.DeadlineExceeded for a
// context error, the code of a gRPC status, and codes.Unknown otherwise. It
// reads any error objup returns, and those of UploadMany's results.
func CodeOf(err error) codes.Code { return codeOf(err) }

// GRPCStatus returns the status of the cause when it is a gRPC status, otherwise a
// status with e.Code and e's message, so status.FromError(err) always works.
func (e *Error) GRPCStatus() *status.Status {
	if s, ok := status.FromError(e.Err); ok && s.Code() != codes.Unknown {
		return s
	}
	return status.New(e.Code, e.Error())
}

// codeOf classifies err with a gRPC code: the Code of an *Error in err's
// chain, else as xfer.CodeOf does.
func codeOf(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	var oe *Error
	if errors.As(err, &oe) {
		return oe.Code
	}
	return xfer.CodeOf(err)
}

// newError returns err as the failure of op on gs://bucket/object: the
// *Error in err's chain if there is one, else one with the fields of the
// *xfer.OpError in its chain (a mode's failure), else a new one.
func newError(op, bucket, object string, err error) *Error {
	var oe *Error
	if errors.As(err, &oe) {
		return oe
	}
	if err == nil {
		return &Error{Op: op, Bucket: bucket, Object: object}
	}
	xe := xfer.Fail(&xfer.Target{Bucket: bucket, Object: object}, op, err)
	code := xe.Code
	if code == codes.OK {
		code = codeOf(xe.Err)
	}
	return &Error{Op: xe.Op, Bucket: xe.Bucket, Object: xe.Object, Code: code, Err: xe.Err, unknown: xe.Unknown}
}

func invalid(op, bucket, object, format string, args ...any) *Error {
	return &Error{Op: op, Bucket: bucket, Object: object, Code: codes.InvalidArgument, Err: fmt.Errorf(format, args...)}
}

// IsOutcomeUnknown reports whether err is the failure of an upload that
// may nevertheless have been stored, or may be later: a request that could
// finish the object went out whole, its answer was lost (a broken
// connection, an attempt timeout, the context ending while it was
// awaited), and no mechanism of the service settled it (see "The truth
// about an outcome" in the package doc: a session is asked or cancelled, a
// one-shot write has no identity to ask for). It also holds for a DataLoss
// error about an object the service did store, of another size or CRC32C
// than what was written. The error keeps its code (often Canceled,
// DeadlineExceeded or the last attempt's Unavailable). An error for which
// IsOutcomeUnknown is false means that nothing was stored.
func IsOutcomeUnknown(err error) bool {
	var oe *Error
	return errors.As(err, &oe) && oe.unknown
}
