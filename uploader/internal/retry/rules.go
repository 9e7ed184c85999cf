package retry

import (
	"errors"
	"io"
	"strings"

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

// AnswerLost reports whether err, the failure of an attempt that went out,
// leaves open whether the service applied it: the connection failed, the
// attempt's time ran out or the context ended before the answer, or the
// service's own status says it may not know (Internal, Unknown, Aborted).
// A refusal (a precondition, a bad request, pushback) was not applied.
func AnswerLost(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Internal, codes.Unknown, codes.Aborted:
		return true
	}
	return false
}

// IsPushback reports whether err is the service pushing back for load:
// RESOURCE_EXHAUSTED (HTTP 429), or an HTTP 503 answer. A gRPC
// UNAVAILABLE is not counted: gRPC also reports a broken connection so,
// and the network's faults say nothing of the bucket's load.
func IsPushback(err error) bool {
	switch status.Code(err) {
	case codes.ResourceExhausted:
		return true
	case codes.Unavailable:
		s, _ := status.FromError(err)
		return strings.HasPrefix(s.Message(), "HTTP 503")
	}
	return false
}

// IsNamePushback reports whether err refuses a write for its object's own
// rate of mutations, as GCS words it ("exceeded the rate limit for object
// mutation operations").
func IsNamePushback(err error) bool {
	if status.Code(err) != codes.ResourceExhausted {
		return false
	}
	s, _ := status.FromError(err)
	return strings.Contains(s.Message(), "object mutation")
}
