package mode

import (
	"context"

	"github.com/objup/objup/uploader/internal/xfer"
)

// The session's waits: for its window, its finish, a flush, and the
// Writer's for a buffer, each giving way to the recovery of a broken
// stream.

// waitFor waits until cond holds (evaluated under s.mu), recovering from
// stream failures on the way.
func (s *resumable) waitFor(cond func() bool) error { return s.waitIn(context.Background(), cond) }

// waitIn is waitFor that also gives up when ctx ends (a Flush's context):
// it then returns ctx's error, and the session goes on.
func (s *resumable) waitIn(ctx context.Context, cond func() bool) error {
	done := ctx.Done()
	for {
		s.mu.Lock()
		ok, serr, persisted := cond(), s.streamErr, s.persisted
		s.mu.Unlock()
		s.report(persisted)
		if ok {
			return nil
		}
		if serr != nil || s.st == nil {
			if err := s.recover(); err != nil {
				return err
			}
			continue
		}
		// No answer will come while nothing sent awaits one: send what was
		// kept back. Otherwise wait for the answer, so the next chunks can
		// still fill a whole message.
		if s.st.Idle() && s.st.Behind() {
			if err := s.send(true); err != nil {
				return err
			}
			continue
		}
		select {
		case <-s.acked:
		case <-s.u.Ctx.Done():
			return xfer.Fail(&s.u.Target, s.names.Stream, s.u.Ctx.Err())
		case <-done:
			return ctx.Err()
		}
	}
}

// waitContext returns a context that ends when the current stream fails (or
// the upload's context ends), for the Writer's waits for a buffer: while the
// stream is broken, chunks come back only after recover.
func (s *resumable) waitContext() context.Context {
	if s.st == nil {
		return doneCtx
	}
	return s.st.Broken()
}
