package retry

import (
	"errors"
	"fmt"
	"time"

	"github.com/googleapis/gax-go/v2"

	"github.com/objup/objup/uploader/internal/mono"
)

// ErrExhausted marks the error of an upload that ran out of retries: the
// errors Episode.Fail returns wrap it and the last attempt's error.
var ErrExhausted = errors.New("retries exhausted")

// Limits bound the retries of a failure episode. They are read, never
// written, by an Episode, and may be shared by many.
type Limits struct {
	// Backoff is the pause between attempts, with full jitter.
	Backoff gax.Backoff
	// MaxAttempts bounds the attempts of an episode, the first included;
	// 0 leaves only the deadline.
	MaxAttempts int
	// Deadline bounds an episode, from its first failed attempt.
	Deadline time.Duration
	// AttemptTimeout bounds one attempt.
	AttemptTimeout time.Duration
}

// MinAttempt is the least time worth an attempt: no retry starts with less
// of the deadline left, so the last attempt is not cut so short that it
// fails on its own deadline and hides the service's answer. It is a tenth
// of the deadline, at most a quarter of the attempt timeout and at most a
// second.
func (l *Limits) MinAttempt() time.Duration {
	return min(l.Deadline/10, l.AttemptTimeout/4, time.Second)
}

// Episode is the state of an upload's current failure episode: when it
// started, its failed attempts, and its backoff. Init prepares it; the
// limits passed to its methods must be those given to Init. It is not safe
// for concurrent use.
type Episode struct {
	bo       gax.Backoff
	start    mono.Time // first failure of the current episode; zero if none
	attempts int       // failed attempts in the episode
}

// Init prepares e for an upload with limits l.
func (e *Episode) Init(l *Limits) { e.bo = l.Backoff }

// Progress ends a failure episode: the next failure gets a fresh deadline,
// attempt count and backoff.
func (e *Episode) Progress(l *Limits) {
	if e.start != 0 {
		e.start, e.attempts, e.bo = 0, 0, l.Backoff
	}
}

// AttemptTimeout is the time the next attempt may take: the attempt
// timeout, cut to what is left of the episode's deadline (but not below
// MinAttempt).
func (e *Episode) AttemptTimeout(l *Limits) time.Duration {
	d := l.AttemptTimeout
	if e.start != 0 {
		if left := l.Deadline - mono.Now().Since(e.start); left < d {
			d = max(left, l.MinAttempt())
		}
	}
	return d
}

// Fail counts a failed attempt that the Rules allow to repeat, whose error
// is cause, and returns the pause before the next attempt; or, when the
// episode has used its attempts or its deadline, an error that wraps
// ErrExhausted and cause. The pause is cut so that the retry still starts
// with MinAttempt of the deadline left; only when not even that is left
// does the episode end, having used its deadline.
func (e *Episode) Fail(l *Limits, cause error) (time.Duration, error) {
	t0 := mono.Now()
	if e.start == 0 {
		e.start = t0
	}
	e.attempts++
	if l.MaxAttempts > 0 && e.attempts >= l.MaxAttempts {
		return 0, fmt.Errorf("%w after %d attempts: %w", ErrExhausted, e.attempts, cause)
	}
	left := l.Deadline - t0.Since(e.start) - l.MinAttempt()
	if left <= 0 {
		return 0, fmt.Errorf("%w: retry deadline of %v reached after %d attempts: %w", ErrExhausted, l.Deadline, e.attempts, cause)
	}
	return min(e.bo.Pause(), left), nil
}
