package mode

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/objup/objup/uploader/internal/xfer"

	"github.com/objup/objup/internal/wire"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// recover resumes the session after its stream failed.
func (s *resumable) recover() error {
	s.mu.Lock()
	cause := s.streamErr
	s.mu.Unlock()
	if cause == nil {
		cause = fmt.Errorf("stream closed: %w", io.ErrUnexpectedEOF)
	}
	return s.recoverFrom(s.names.Stream, cause)
}

// teardown ends the current stream; its reports are over once it returns.
func (s *resumable) teardown(cause error) error {
	if s.st != nil {
		cause = s.st.Teardown(cause)
		s.st = nil
	}
	s.mu.Lock()
	s.streamErr = nil
	s.mu.Unlock()
	return cause
}

// recoverFrom resumes the session after cause, an error of op, broke the
// stream: after the backoff it asks the service how much it persisted,
// releases that, opens a new stream and resends the rest, retried as one
// episode of the retrier. It gives up on errors the retrier does not
// retry, and when the retry budget is spent, with an error that names the
// operation that failed last.
func (s *resumable) recoverFrom(op string, cause error) error {
	cause = s.teardown(cause)
	if s.moved(cause) {
		cause = errPersistedMoved
	}
	first := cause
	var fatal error // an answer no retry can mend
	err := do(s.retry, &s.u.Target, op, true, cause, func() (string, bool, error) {
		size := int64(-1)
		if s.final {
			size = s.lastNow()
		}
		persisted, o, err := s.queryStatus(size)
		if err != nil {
			return s.names.Query, true, err
		}
		s.mu.Lock()
		if o != nil && s.resource == nil {
			s.resource = o
		}
		ahead := o == nil && s.skipAheadLocked(persisted)
		if !ahead {
			err = s.ackLocked(persisted)
		}
		s.mu.Unlock()
		if ahead {
			// No stream until the Writer's data passes what the service
			// holds (see send).
			s.report(persisted)
			return "", true, nil
		}
		if err != nil {
			fatal = err
			return "", true, nil
		}
		if o != nil {
			return "", true, nil
		}
		s.report(persisted)
		s.resumed = true
		if err := s.open(persisted); err != nil {
			return s.names.Stream, true, err
		}
		// Resend everything the service does not have, then finish if the
		// upload had come that far.
		if err := s.sendOn(s.st, true); err != nil {
			err = s.teardown(err)
			if s.moved(err) {
				err = errPersistedMoved
			}
			return s.names.Stream, true, err
		}
		s.ev.Resumed(persisted, first)
		return "", true, nil
	})
	if err == nil && fatal != nil {
		return xfer.Fail(&s.u.Target, s.names.Query, fatal)
	}
	return err
}

// queryStatus asks how much of the session the service persisted, or the
// object it finished (size: the object's size if known, else -1).
func (s *resumable) queryStatus(size int64) (int64, *wire.Object, error) {
	if s.u.App != nil {
		return s.appendStatus(size, s.retry.AttemptTimeout())
	}
	return s.tr.QueryStatus(s.u, s.id, s.route, size, s.retry.AttemptTimeout())
}

// settle decides the outcome of the session after its upload failed with
// err once its last chunk was pushed: a finish may have gone out, and the
// service may still finalize the session (it applies a request it read
// whole, even after the answer was lost). A session finalizes one object
// at most, and only the session can say whether it did:
//
//  1. a status query: a finalized session answers with its object, which
//     is then the upload's;
//  2. otherwise the session is cancelled: after that nothing of it can be
//     finalized (storage.proto: writes after a cancel fail);
//  3. a service may answer a cancel with success for a session that a
//     late finish finalized just before it (Google's testbench does), so
//     a second query tells: the object, or a cancelled session (NOT_FOUND
//     over gRPC, 499 over JSON), and the failure is then known.
//
// A failed call leaves the outcome unknown. Before the last chunk no
// finish went out, and the failure is known: nothing of the session can
// be finalized. Three calls at most, within outcomeGrace once the upload's
// context ended.
func (s *resumable) settle(err error) (*wire.Object, error) {
	err = s.teardown(err)
	s.mu.Lock()
	o := s.resource
	s.mu.Unlock()
	if o != nil {
		return o, nil
	}
	if !s.final || s.id == "" {
		return nil, err
	}
	u, r, done := settling(s.svc, s.u, s.retry.Config())
	defer done()
	o, known := settleSession(u, s.tr, s.id, s.lastNow(), func() time.Duration {
		t := r.AttemptTimeout()
		if dl, ok := u.Ctx.Deadline(); ok {
			t = max(min(t, time.Until(dl)), time.Millisecond)
		}
		return t
	})
	switch {
	case o != nil:
		s.mu.Lock()
		s.resource = o
		s.mu.Unlock()
		return o, nil
	case known:
		s.id = ""
		return nil, err
	}
	oe := xfer.Fail(&s.u.Target, s.names.Stream, err)
	oe.Unknown = true
	return nil, oe
}

// settleSession makes one pass of resumable.settle's calls on session id
// of u (size bytes, once finished), each bounded by timeout(): it returns
// the session's object if it was finalized, or known when the session is
// cancelled and nothing of it can be finalized; neither when a call
// failed.
func settleSession(u *xfer.Request, tr xfer.Transport, id string, size int64, timeout func() time.Duration) (o *wire.Object, known bool) {
	_, o, err := tr.QueryStatus(u, id, xfer.NoRoute, size, timeout())
	if o != nil || err != nil {
		return o, false
	}
	if tr.CancelUpload(u, id, timeout()) != nil {
		return nil, false
	}
	_, o, err = tr.QueryStatus(u, id, xfer.NoRoute, size, timeout())
	switch {
	case o != nil:
		return o, false
	case err == nil, status.Code(err) == codes.NotFound, status.Code(err) == codes.Canceled:
		// The session is cancelled (gRPC: NOT_FOUND; JSON: 499).
		return nil, true
	}
	return nil, false
}

// errServiceAhead is the cause of a recovery of a session resumed from a
// handle whose service holds more than this Writer pushed: retried, with
// a status query that skips it.
var errServiceAhead = status.Error(codes.Unavailable, "the session holds more than this Writer pushed: an earlier Writer's message arrived")

// errPersistedMoved is the cause of a recovery whose stream the service
// refused because the offset it started at was no longer the session's
// persisted size: retried, with a new status query.
var errPersistedMoved = status.Error(codes.Unavailable, "the session's persisted size moved past the offset the stream resumed at")

// moved reports whether cause, the failure of a stream, is the service's
// refusal of the offset the stream started at because the session's
// persisted size moved since the status query that gave it: the service
// still applies what it had received when the last stream broke (a
// request a front end had read, bytes a network held), and a stream's
// first write_offset must equal the persisted size QueryWriteStatus would
// return now (google.storage.v2 WriteObjectRequest.write_offset). One
// status query tells.
func (s *resumable) moved(cause error) bool {
	if s.u.App != nil {
		// An appendable object's status is a stream of its own.
		return false
	}
	switch status.Code(cause) {
	case codes.InvalidArgument, codes.OutOfRange, codes.FailedPrecondition:
	default:
		return false
	}
	s.mu.Lock()
	acked, done := s.persisted > s.opened, s.resource != nil
	s.mu.Unlock()
	if !s.resumed || acked || done {
		// Only a stream that a status query placed, refused before the
		// service acknowledged anything of it: a refusal after progress
		// is the service's answer to the data.
		return false
	}
	persisted, o, err := s.tr.QueryStatus(s.u, s.id, s.route, -1, s.retry.AttemptTimeout())
	return err == nil && (o != nil || persisted > s.opened)
}

// skipAheadLocked takes in a status that says the service holds more than
// was pushed, which only a message of an earlier Writer (see fromHandle)
// can have made: every chunk pushed is persisted, and the chunks pushed
// next that the service holds are dropped (see take). It reports whether
// it did. s.mu is held.
func (s *resumable) skipAheadLocked(persisted int64) bool {
	if !s.fromHandle || persisted <= s.last || s.final {
		return false
	}
	for i, r := range s.pending {
		s.releaseLocked(r)
		s.pending[i] = nil
	}
	s.pending = s.pending[:0]
	s.persisted = persisted
	return true
}

// Unsettled reports whether the session's outcome, should the upload
// fail, is the service's to tell: one an earlier Writer began may have
// sent its finish (see fromHandle). A status query settles it later
// (Client.Resume of the same handle).
func (s *resumable) Unsettled() bool { return s.fromHandle }

// abort abandons the session: the stream is torn down and the session
// cancelled, so it is never finalized.
func (s *resumable) abort(cause error) {
	s.teardown(cause)
	s.mu.Lock()
	finished := s.resource != nil
	s.mu.Unlock()
	if !finished && s.id != "" {
		// The cancel goes out even when the upload's context ended, in
		// the background so that the caller does not wait for it.
		u, tr, id, timeout := s.u.Detached(s.u.Ctx), s.tr, s.id, s.retry.Config().Limits.AttemptTimeout
		s.svc.Background(func() { tr.CancelUpload(u, id, timeout) })
		s.id = ""
	}
}

// close ends the session's stream and drops the session's hold on every
// chunk still pending; the transport lets go of its own when the stream is
// torn down.
func (s *resumable) close() {
	s.teardown(errors.New("upload closed"))
	s.dropReady()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	for i, r := range s.pending {
		r.Unref()
		s.pending[i] = nil
	}
	s.pending = nil
}
