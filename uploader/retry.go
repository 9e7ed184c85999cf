package uploader

import (
	"fmt"
	"time"

	"github.com/objup/objup/uploader/internal/xfer"

	"github.com/googleapis/gax-go/v2"

	"github.com/objup/objup/uploader/internal/retry"
)

// RetryPolicy says which uploads are retried after a transient failure. It
// has the meaning of the official client's storage.RetryPolicy; its zero
// value keeps the policy the upload would have without it.
type RetryPolicy int

const (
	// RetryIdempotent retries only what is safe to repeat: a resumable upload
	// (its session resumes where the service left off, so a retry never
	// writes twice), a one-shot upload whose precondition (Conditions)
	// makes it idempotent, and any write the service refused for load
	// (RESOURCE_EXHAUSTED, HTTP 429): the front end refuses such a request
	// before it is applied (RFC 6585's rate limiting), so repeating it
	// cannot write twice. A 503 may come after the write was applied, and
	// follows idempotence. It is the default, as in the official client
	// (which does not retry a refused unconditional write).
	RetryIdempotent RetryPolicy = 1 + RetryPolicy(retry.Idempotent)
	// RetryAlways retries every upload, including unconditional one-shot ones
	// (a retried one-shot upload may then overwrite a concurrent writer's
	// object).
	RetryAlways RetryPolicy = 1 + RetryPolicy(retry.Always)
	// RetryNever never retries.
	RetryNever RetryPolicy = 1 + RetryPolicy(retry.Never)
)

// Retry defaults. The backoff is shorter than the official client's (1 s
// initial, 30 s cap), because objup's uploads are mostly small and a quick
// second attempt usually succeeds; the deadlines are the official Writer's.
const (
	defaultBackoffInitial  = 100 * time.Millisecond
	defaultBackoffMax      = 5 * time.Second
	defaultBackoffMultiply = 2
	defaultRetryDeadline   = 32 * time.Second
	defaultAttemptTimeout  = 32 * time.Second
)

// Retry configures retries; pass it to WithRetry. One retry engine serves
// every RPC of an upload: one classification (ErrorFunc), one exponential
// backoff with full jitter, a retry deadline per failure episode and a
// timeout per attempt. Zero fields keep the setting the upload would have
// without it (on a Writer, the client's); negative ones are rejected by
// NewClient or NewWriter.
type Retry struct {
	// Policy sets which uploads are retried (default RetryIdempotent).
	Policy RetryPolicy
	// Backoff is the exponential backoff between attempts, with full
	// jitter (each pause is random between 0 and the current period, which
	// starts at Initial and grows by Multiplier up to Max). Zero fields
	// keep their defaults (100 ms, 5 s, 2); a Multiplier below 1, or a Max
	// below Initial, is rejected.
	Backoff gax.Backoff
	// ErrorFunc replaces objup's decision whether an error from the
	// service or the network is transient: it receives the cause (a gRPC
	// status error, or an error wrapping io.ErrUnexpectedEOF for a broken
	// stream; the JSON API's answers and failures are mapped to the same
	// codes: a network failure is UNAVAILABLE, a timeout
	// DEADLINE_EXCEEDED, an HTTP status its usual code) and returns true
	// to retry it. As with the official client's WithErrorFunc, it decides
	// alone; the policy, the deadline and the attempt limit still apply,
	// and a cancelled upload context is never retried. A gRPC request that
	// never left the process is offered to it only with the codes that
	// mean no connection was ready (UNAVAILABLE, DEADLINE_EXCEEDED); any
	// other local error (an invalid header, say) is never retried. It
	// must be safe for concurrent use. The default is ShouldRetry.
	ErrorFunc func(err error) bool
	// MaxAttempts bounds the attempts of one failure episode (the first
	// try included), as the official client's WithMaxAttempts. The
	// default leaves only the retry deadline.
	MaxAttempts int
	// Deadline bounds how long an upload keeps retrying one failure
	// episode: from the first failed attempt until an attempt makes
	// progress (a call succeeds, or the service acknowledges data), like
	// the official Writer's ChunkRetryDeadline. No retry starts with less
	// than a tenth of it left (at most a second, at most a quarter of the
	// attempt timeout), and the last retry's attempt ends with the
	// deadline. When it is spent, the upload fails with the last attempt's
	// error and code. Default 32 s.
	Deadline time.Duration
	// AttemptTimeout bounds one attempt: a unary call (the one-shot
	// WriteObject, StartResumableWrite, QueryWriteStatus) must complete,
	// and a sent chunk of a resumable stream must be acknowledged, within
	// it, or the attempt is abandoned and retried (like the official
	// Writer's ChunkTransferTimeout, which only covers chunks). The
	// abandoned attempt's stream is reset (cancelled), never its
	// connection, which other uploads share; a dead connection is found
	// by gRPC keepalive and the kernel's TCP_USER_TIMEOUT. The service may
	// still apply what it read of the abandoned attempt: see "The truth
	// about an outcome" in the package doc. Default 32 s.
	AttemptTimeout time.Duration
}

// retryConfig is the retry behaviour of one upload.
type retryConfig struct {
	retry.Config             // limits, rules, and whether admission paces retries
	policy       RetryPolicy // as set, checked by validate
}

func defaultRetryConfig() retryConfig {
	return retryConfig{
		Config: retry.Config{
			Limits: retry.Limits{
				Backoff:        gax.Backoff{Initial: defaultBackoffInitial, Max: defaultBackoffMax, Multiplier: defaultBackoffMultiply},
				Deadline:       defaultRetryDeadline,
				AttemptTimeout: defaultAttemptTimeout,
			},
			Rules: retry.Rules{ShouldRetry: ShouldRetry},
		},
		policy: RetryIdempotent,
	}
}

// merge applies r's non-zero fields.
func (c *retryConfig) merge(r *Retry) {
	if r.Policy != 0 {
		c.policy = r.Policy
		c.Rules.Policy = retry.Policy(r.Policy - 1)
	}
	b := &c.Limits.Backoff
	if r.Backoff.Initial != 0 {
		b.Initial = r.Backoff.Initial
	}
	if r.Backoff.Max != 0 {
		b.Max = r.Backoff.Max
	}
	if r.Backoff.Multiplier != 0 {
		b.Multiplier = r.Backoff.Multiplier
	}
	if r.ErrorFunc != nil {
		c.Rules.ShouldRetry = r.ErrorFunc
	}
	if r.MaxAttempts != 0 {
		c.Limits.MaxAttempts = r.MaxAttempts
	}
	if r.Deadline != 0 {
		c.Limits.Deadline = r.Deadline
	}
	if r.AttemptTimeout != 0 {
		c.Limits.AttemptTimeout = r.AttemptTimeout
	}
}

// validate checks the merged settings.
func (c *retryConfig) validate() error {
	l, b := &c.Limits, &c.Limits.Backoff
	switch {
	case c.policy < RetryIdempotent || c.policy > RetryNever:
		return fmt.Errorf("unknown retry policy %d", c.policy)
	case b.Initial < 0 || b.Max < 0 || b.Multiplier < 1:
		return fmt.Errorf("backoff %+v: durations must not be negative and Multiplier must be at least 1", *b)
	case b.Max < b.Initial:
		return fmt.Errorf("backoff Max %v is below Initial %v", b.Max, b.Initial)
	case l.MaxAttempts < 0:
		return fmt.Errorf("max attempts %d is negative", l.MaxAttempts)
	case l.Deadline < 0:
		return fmt.Errorf("retry deadline %v is negative", l.Deadline)
	case l.AttemptTimeout < 0:
		return fmt.Errorf("attempt timeout %v is negative", l.AttemptTimeout)
	}
	return nil
}

// ShouldRetry reports whether err, from the service or the network, is
// transient: codes UNAVAILABLE, RESOURCE_EXHAUSTED, INTERNAL and
// DEADLINE_EXCEEDED, a stream that broke (io.ErrUnexpectedEOF), and a
// redirect of an appendable object's stream (ABORTED with a
// BidiWriteObjectRedirectedError), as the official client's ShouldRetry for
// gRPC. It is the default of WithErrorFunc,
// and a custom function may call it.
func ShouldRetry(err error) bool { return retry.ShouldRetry(err) || xfer.IsRedirect(err) }
