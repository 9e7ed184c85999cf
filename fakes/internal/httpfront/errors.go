package httpfront

import (
	"errors"

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
