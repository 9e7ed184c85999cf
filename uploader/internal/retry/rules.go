package retry

import (
	"errors"
	"io"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Policy says which uploads are retried after a transient failure; its
// values are those of the uploader's RetryPolicy.
type Policy int

// The policies, as the uploader's RetryIdempotent, RetryAlways and
// RetryNever.
const (
	// Idempotent retries what is safe to repeat, and a write refused for
	// load.
	Idempotent Policy = iota
	// Always retries every upload.
	Always
	// Never retries nothing.
	Never
)

// Rules classify a failed attempt. The zero Rules retries idempotent
// requests with ShouldRetry's classification.
type Rules struct {
	// Policy says which uploads are retried.
	Policy Policy
	// ShouldRetry says whether an error from the service or the network
	// is transient: the uploader's classification (ShouldRetry, and what
	// only the uploader knows, such as a redirect of an appendable
	// object's stream), or its user's. nil is ShouldRetry. It must be safe
	// for concurrent use.
	ShouldRetry func(error) bool
}

// Retryable reports whether a failed attempt may be repeated. sent says
// whether the request may have left the process; a request that did not
// (gRPC refused it locally, for example for an invalid header) is retried
// only for network codes, which mean no connection was ready yet. A write
// the service refused for load (RESOURCE_EXHAUSTED) is refused before it
// is applied, so it is retried whatever the policy says of idempotence
// (unless the policy is Never).
func (r *Rules) Retryable(err error, sent, idempotent bool) bool {
	switch {
	case r.Policy == Never:
		return false
	case sent && status.Code(err) == codes.ResourceExhausted:
		// Refused for load (429), before it was applied: repeating it
		// cannot write twice, whatever the policy says of idempotence.
	case !idempotent && r.Policy != Always:
		return false
	case !sent && !IsNetworkCode(status.Code(err)):
		return false
	case r.ShouldRetry != nil:
		return r.ShouldRetry(err)
	}
	return ShouldRetry(err)
}

// ShouldRetry reports whether err, from the service or the network, is
// transient: codes UNAVAILABLE, RESOURCE_EXHAUSTED, INTERNAL and
// DEADLINE_EXCEEDED, and a stream that broke (io.ErrUnexpectedEOF).
func ShouldRetry(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.ResourceExhausted, codes.Internal, codes.DeadlineExceeded:
		return true
	}
	return false
}

// IsNetworkCode reports whether c means that no connection was ready
// (UNAVAILABLE, DEADLINE_EXCEEDED): the only codes with which a request
// that never left the process is retried.
func IsNetworkCode(c codes.Code) bool {
	return c == codes.Unavailable || c == codes.DeadlineExceeded
}
