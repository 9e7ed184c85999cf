package mode

import (
	"context"
	"time"
)

// The Writer's waits of a parallel upload: for a buffer, while parts are
// in flight, and for the parts at its end.

// buffer takes an empty buffer for the part being filled. When it must
// wait and no part is uploading, the part is sent as it is, smaller than
// PartSize: the pool budget is then held by the part itself, and nothing
// else would give a buffer back. A part that ends during the wait ends the
// wait, so that this is looked at again.
func (p *parallel) Buffer() (*[]byte, error) {
	h := &p.Params
	if b, ok := h.Buffers.TryBuffer(); ok {
		return b, nil
	}
	defer waited(h.Events, time.Now())
	for {
		filling := p.cur != nil && len(p.cur.refs) > 0
		if filling && p.idle(nil) && p.mp != nil && p.cur.size < MinMultipartPart {
			return p.starve()
		}
		if filling && p.idle(nil) {
			if err := p.dispatch(); err != nil {
				return nil, err
			}
			filling = false
		}
		ctx, cancel := context.WithCancel(p.ctx)
		if p.idle(cancel) && filling {
			// The last part ended before the wake was set.
			cancel()
		}
		b, done, err := p.waitBuffer(ctx, func() { p.idle(nil); cancel() })
		if done {
			return b, err
		}
	}
}

// waitBuffer waits for a buffer in ctx, then calls stop (which ends ctx):
// done with the buffer, or with the upload's failure once p.ctx ended (its
// own error, not that of ctx, which stop, or a part that ended, may have
// cancelled as the upload's deadline passed); not done when ctx ended
// first, for the caller to look again.
func (p *parallel) waitBuffer(ctx context.Context, stop func()) (b *[]byte, done bool, err error) {
	b, err = p.Buffers.WaitBuffer(ctx)
	stop()
	switch {
	case err == nil:
		return b, true, nil
	case p.ctx.Err() != nil:
		return nil, true, p.failure(p.ctx.Err())
	}
	return nil, false, nil
}

// idle sets the wake of the Writer's wait for a buffer (nil: none) and
// reports whether no part is uploading.
func (p *parallel) idle(wake context.CancelFunc) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wake = wake
	return p.inflight == 0
}

// ended is the end of a part's goroutine: it wakes the Writer's wait for
// a buffer, if there is one.
func (p *parallel) ended() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inflight--
	if p.wake != nil {
		p.wake()
	}
}

// failure returns the error that ended the upload: a part's, which ended
// p.ctx, rather than the wait it interrupted.
func (p *parallel) failure(err error) error {
	if p.ctx.Err() != nil && p.Request.Ctx.Err() == nil {
		if gerr := p.wait(); gerr != nil {
			return gerr
		}
	}
	return err
}

// wait waits for every part's goroutine and returns the first failure,
// or the context's error if w's context ends first: a part whose
// finishing request went out runs to its answer (see attemptCtx), and the
// Writer does not wait for that past its context (cleanup does).
func (p *parallel) wait() error {
	p.waitOnce.Do(func() {
		p.allDone = make(chan struct{})
		go func() {
			p.err = p.g.Wait()
			// What gRPC still holds of the parts' messages is released
			// with the parts' chunks (see [xfer.Lifetime.Wait]).
			for _, pt := range p.parts {
				p.life.Adopt(&pt.Life)
			}
			close(p.allDone)
		}()
	})
	select {
	case <-p.allDone:
		return p.err
	case <-p.Request.Ctx.Done():
		return p.Request.Ctx.Err()
	}
}
