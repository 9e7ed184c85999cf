package uploader

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// errChunkTimeout cancels a stream on which a sent chunk saw no acknowledgement
// within RetryPolicy.ChunkTimeout.
var errChunkTimeout = errors.New("no acknowledgement from the service within the chunk timeout")

// backoff is exponential backoff with full jitter, bounded by MaxElapsed.
type backoff struct {
	p     RetryPolicy
	next  time.Duration
	start time.Time
}

func newBackoff(p RetryPolicy) backoff {
	return backoff{p: p, next: p.Initial, start: time.Now()}
}

var errRetryBudget = errors.New("retry time exhausted")

// wait sleeps for the next backoff, or returns an error when ctx is done or the
// time budget is spent.
func (b *backoff) wait(ctx context.Context) error {
	if time.Since(b.start) >= b.p.MaxElapsed {
		return errRetryBudget
	}
	d := time.Duration(rand.Int64N(int64(b.next) + 1))
	b.next = min(time.Duration(float64(b.next)*b.p.Multiplier), b.p.Max)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
