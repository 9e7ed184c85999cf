package mode

import (
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/xfer"
)

// An appendable object has no session: its status is what a new stream on
// the object answers when it opens, and that stream then carries the
// data. The session keeps the object's state (xfer.Appendable) current
// from what the transport reports; the transport only reads it.

// openAppend opens a stream on the session's appendable object, where its
// state says, bounded by timeout, and takes in the service's answer. It
// returns the stream, not yet started, and the bytes the service holds.
func (s *resumable) openAppend(timeout time.Duration) (xfer.AppendStream, int64, error) {
	a := s.u.App
	at := a.Route()
	st, ans, err := s.tr.OpenAppend(s.u, at, timeout)
	if !at.Exists && ans.Sent {
		a.Mu.Lock()
		a.Opened = true
		a.Mu.Unlock()
	}
	if err != nil {
		if a.Redirected(err, s.u.Life.Ev) && !at.Exists {
			// An answer: the service did not create the object here
			// (it would have named the generation).
			a.Mu.Lock()
			a.Opened = false
			a.Mu.Unlock()
		}
		return nil, 0, err
	}
	a.OpenAnswered(ans)
	return st, ans.Persisted, nil
}

// appendStatus is the status query of an appendable object: a new stream
// on the object, whose first answer tells what the service persisted
// (bytes sent and not flushed when a stream broke may be lost); open then
// goes on with that stream. A finish that went out may have finalized the
// object before its answer was lost: then the object itself is looked up,
// and returned if it is this upload's generation of size bytes.
func (s *resumable) appendStatus(size int64, timeout time.Duration) (int64, *wire.Object, error) {
	a := s.u.App
	s.dropReady()
	a.Mu.Lock()
	lost := a.Opened && !a.Created && !a.Takeover
	a.Mu.Unlock()
	if lost {
		// The first open went out and got no answer (see
		// xfer.ErrFirstOpenLost).
		return 0, nil, xfer.ErrFirstOpenLost
	}
	st, persisted, err := s.openAppend(timeout)
	if err != nil {
		if size >= 0 && status.Code(err) == codes.FailedPrecondition {
			if o, gerr := s.tr.GetObject(s.u, s.u.Object, timeout); gerr == nil && o.GetSize() == size && o.GetFinalizeTime() != nil {
				a.Mu.Lock()
				ours := o.GetGeneration() == a.Gen
				a.Mu.Unlock()
				if ours {
					return size, o, nil
				}
			}
		}
		return 0, nil, err
	}
	// The status came on the connection of the object's streams: what
	// gRPC still holds of the earlier streams' messages it never reads
	// again (see xfer.Lifetime.ForceRelease).
	s.u.Life.ForceRelease()
	a.Mu.Lock()
	o := a.Object
	a.Mu.Unlock()
	if isFinalized(o) {
		// A finish whose answer was lost finalized the object: the
		// reopened stream answered with it, and ends.
		st.Drop()
		return o.GetSize(), o, nil
	}
	s.ready, s.readyAt = st, persisted
	return persisted, nil, nil
}

// openAppendStream is open for an appendable object: it goes on with the
// stream appendStatus opened, or opens one (the object's first, or a
// takeover's), and starts it.
func (s *resumable) openAppendStream(persisted int64, timeout time.Duration) (xfer.Stream, error) {
	st, got := s.ready, s.readyAt
	s.ready = nil
	if st == nil {
		var err error
		if st, got, err = s.openAppend(timeout); err != nil {
			return nil, err
		}
	}
	st.Start(s)
	if got != persisted && persisted != 0 {
		err := fmt.Errorf("the service reports %d bytes persisted, %d were expected", got, persisted)
		st.Teardown(err)
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	return st, nil
}

// dropReady tears down a stream that appendStatus opened and open did not
// take.
func (s *resumable) dropReady() {
	if s.ready != nil {
		s.ready.Drop()
		s.ready = nil
	}
}

// isFinalized reports whether o is a finalized object.
func isFinalized(o *wire.Object) bool { return o != nil && o.GetFinalizeTime() != nil }
