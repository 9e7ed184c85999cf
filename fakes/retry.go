package fakes

import (
	"github.com/objup/objup/fakes/internal/grpcfront"
	"github.com/objup/objup/fakes/internal/httpfront"
)

// retryHost is the fake as the retry test API (package retrytest) sees
// it: the HTTP front's part, the gRPC front's part, and the server's
// closing.
type retryHost struct {
	httpfront.RetryHTTP
	grpcfront.RetryGRPC
	stop <-chan struct{}
}

func (h retryHost) Stopping() <-chan struct{} { return h.stop }
