package retry

import (
	"context"
	"fmt"
	"time"
)

// Engine is the one retry engine of an upload: every RPC of the upload
// (one-shot WriteObject, StartResumableWrite, the stream, QueryWriteStatus)
// reports its failures to it, and it decides, with one classification
// (retry.Rules), one backoff and one deadline (retry.Episode), whether to
// try again. A failure episode starts with a failed attempt and ends with
// progress.
type Engine struct {
	cfg *Config
	ev  Events // nil: nobody
	ep  Episode
}

// Config is what an engine follows: its limits and rules, and whether an
// admission stage paces the retries of writes refused for load (gives
// them their turn, so they do not wait out a backoff too).
type Config struct {
	Limits Limits
	Rules  Rules
	Paced  bool
}

// Events is told of retries.
type Events interface {
	Retried(op string, cause error, pause time.Duration)
}

// Init sets the engine up with cfg, reporting to ev (nil: nowhere).
func (r *Engine) Init(cfg *Config, ev Events) {
	r.cfg, r.ev = cfg, ev
	r.ep.Init(&cfg.Limits)
}

// Config returns what the engine follows.
func (r *Engine) Config() *Config { return r.cfg }

// Progress ends a failure episode: the next failure gets a fresh deadline,
// attempt count and backoff.
func (r *Engine) Progress() { r.ep.Progress(&r.cfg.Limits) }

// AttemptTimeout is the time the next attempt may take: the attempt
// timeout, cut to what is left of the episode's retry deadline.
func (r *Engine) AttemptTimeout() time.Duration { return r.ep.AttemptTimeout(&r.cfg.Limits) }

// retry handles a failed attempt: it returns nil, after the backoff, if the
// caller should try again, and otherwise the error to report. The error of
// an exhausted episode wraps the last cause, so its code and message survive
// (status.Code and codeOf read them).
func (r *Engine) retry(ctx context.Context, op string, err error, sent, idempotent bool) error {
	if ctxEnded(ctx) != nil {
		return contextError(ctx, err)
	}
	if !r.cfg.Rules.Retryable(err, sent, idempotent) {
		return err
	}
	pause, exhausted := r.ep.Fail(&r.cfg.Limits, err)
	if exhausted != nil {
		return exhausted
	}
	if IsPushback(err) && !IsNamePushback(err) && r.cfg.Paced {
		// The admission stage paces the retry, at its turn by age.
		pause = 0
	}
	if r.ev != nil {
		r.ev.Retried(op, err, pause)
	}
	t := time.NewTimer(pause)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return contextError(ctx, err)
	}
}

// Do is the one retry loop of an upload: it runs attempt until it
// succeeds or the engine gives up, waiting out the backoff between
// attempts, as ctx allows, and returns the failure and the operation that
// failed last. cause, when not nil, is a failure of op that came before the first
// attempt (the break a recovery starts from): do waits out its backoff
// first. attempt returns the operation it made (op, when it returns ""),
// whether its request may have left the process, and its error. Do reports
// no progress: a call that succeeds ends an episode only when its caller
// says so (a resumed stream has not made progress until data is
// acknowledged).
func (r *Engine) Do(ctx context.Context, op string, idempotent bool, cause error, attempt func() (op string, sent bool, err error)) (string, error) {
	sent := true
	for {
		if cause != nil {
			if err := r.retry(ctx, op, cause, sent, idempotent); err != nil {
				return op, err
			}
		}
		var aop string
		aop, sent, cause = attempt()
		if cause == nil {
			return op, nil
		}
		if aop != "" {
			op = aop
		}
	}
}

// contextError is the error of an upload whose context ended while it was
// retrying cause: the context's error, with the cause named.
func contextError(ctx context.Context, cause error) error {
	if cause == nil {
		return ctxEnded(ctx)
	}
	return fmt.Errorf("%w (while retrying: %v)", ctxEnded(ctx), cause)
}

// ctxEnded returns ctx's error, or context.DeadlineExceeded once its
// deadline has passed: gRPC's own timer for the deadline may end a call a
// moment before the context's timer marks the context done, and the call's
// failure is then the context's.
func ctxEnded(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}
