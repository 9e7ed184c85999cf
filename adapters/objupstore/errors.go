package objupstore

import (
	"errors"

	"google.golang.org/api/googleapi"

	"github.com/objup/objup/internal/httpcode"
	"github.com/objup/objup/uploader"
)

// uploadError is an upload's objup error that also answers errors.As with
// a *googleapi.Error, as the official client's errors do.
type uploadError struct {
	err error
	api *googleapi.Error
}

func (e *uploadError) Error() string { return e.err.Error() }

// Unwrap returns objup's error first, so status.FromError and objup's
// predicates see it, then the *googleapi.Error.
func (e *uploadError) Unwrap() []error { return []error{e.err, e.api} }

// apiError wraps err, when it is objup's, in an uploadError with the HTTP
// status of its code; it returns any other error (nil, the caller's
// reader's) unchanged.
func apiError(err error) error {
	var ue *uploader.Error
	if err == nil || !errors.As(err, &ue) {
		return err
	}
	code, reason := httpcode.Status(ue.Code)
	return &uploadError{err: err, api: &googleapi.Error{
		Code:    code,
		Message: ue.Error(),
		Errors:  []googleapi.ErrorItem{{Reason: reason, Message: ue.Error()}},
	}}
}
