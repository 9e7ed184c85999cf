package xfer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// OpError is the failure of an operation of an upload below the API: the
// modes return it, and the uploader turns it into its *Error with the same
// fields. It says whether the upload's outcome is unknown: the object may
// have been stored although the operation failed.
type OpError struct {
	Op             string     // the operation that failed last
	Bucket, Object string     // the object, when known
	Code           codes.Code // the failure's code; OK: the code of Err (see CodeOf)
	Err            error      // the cause
	Unknown        bool       // the object may have been stored, or may be later
}

// Fail returns err as the failure of op on t's object: the *OpError in
// err's chain if there is one (the operation that failed first names the
// failure), else a new one, whose outcome is unknown when err is
// ErrFirstOpenLost. A nil err is nil.
func Fail(t *Target, op string, err error) *OpError {
	if err == nil {
		return nil
	}
	var oe *OpError
	if errors.As(err, &oe) {
		return oe
	}
	return &OpError{Op: op, Bucket: t.Bucket, Object: t.Object, Err: err, Unknown: errors.Is(err, ErrFirstOpenLost)}
}

// Error implements error, with the text of the uploader's *Error.
func (e *OpError) Error() string { return ErrorText(e.Op, e.Bucket, e.Object, e.Unknown, e.Err) }

// Unwrap returns the cause.
func (e *OpError) Unwrap() error { return e.Err }

// ErrorText is the text of the failure of op on gs://bucket/object with
// cause err. Names that are not valid UTF-8 or hold control characters are
// quoted with Go escapes, so the text is always valid UTF-8 and one line.
func ErrorText(op, bucket, object string, unknown bool, err error) string {
	obj := ""
	if bucket != "" || object != "" {
		obj = " gs://" + printable(bucket) + "/" + printable(object)
	}
	if unknown {
		return fmt.Sprintf("objup: %s%s: outcome unknown, the object may have been stored: %v", op, obj, err)
	}
	return fmt.Sprintf("objup: %s%s: %v", op, obj, err)
}

// printable returns s, or s quoted with Go escapes if it is not valid UTF-8
// or holds a character that is not printable.
func printable(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return s
	}
	return strconv.Quote(s)
}

// CodeOf classifies err with a gRPC code: OK for nil, the code of an
// *OpError in err's chain, Canceled or DeadlineExceeded for a context
// error, Unavailable for a stream the service or the network broke
// (io.ErrUnexpectedEOF), and the code of a gRPC status otherwise.
func CodeOf(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	var oe *OpError
	switch {
	case errors.As(err, &oe):
		if oe.Code != codes.OK {
			return oe.Code
		}
		return CodeOf(oe.Err)
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	}
	if _, ok := status.FromError(err); !ok && errors.Is(err, io.ErrUnexpectedEOF) {
		return codes.Unavailable
	}
	return status.Code(err)
}

// Unknown reports whether err is an operation's failure after which the
// object may have been stored (see OpError).
func Unknown(err error) bool {
	var oe *OpError
	return errors.As(err, &oe) && oe.Unknown
}
