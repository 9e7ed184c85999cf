package mode

import (
	"context"
	"errors"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/xfer"
)

// fakeGCSStream is a session's stream: each Send hands the service the
// data from where the stream stands, which the service acknowledges at
// once, on the Send's goroutine; the finish stores the object (under the
// session's ifGenerationMatch), unless the script says otherwise.
type fakeGCSStream struct {
	g       *fakeGCS
	u       *xfer.Request
	id      string
	sink    xfer.StreamSink
	from    int64
	want    xfer.Pushed
	finSent bool
	holding bool // the finish went out and gets no answer
	dead    bool
	ctx     context.Context
	cancel  context.CancelFunc
}

func (s *fakeGCSStream) From() int64 { return s.from }

func (s *fakeGCSStream) Send(p xfer.Pushed, rs []*xfer.ChunkRef, all bool) error {
	s.want = p
	if s.dead {
		return status.Error(codes.Unavailable, "stream broken")
	}
	g := s.g
	for _, r := range rs {
		if r.Offset > s.from || r.End() <= s.from {
			g.mu.Lock()
			g.misfed = true
			g.mu.Unlock()
			continue
		}
		data := r.Data[s.from-r.Offset:]
		g.mu.Lock()
		sess := g.sessions[s.id]
		sess.data = append(sess.data[:s.from], data...)
		g.mu.Unlock()
		s.from += int64(len(data))
	}
	if !(p.Final && all && s.from == p.Last) || s.finSent {
		s.ack(s.from, nil)
		return nil
	}
	s.finSent = true
	apply, err := g.call(s.u.Ctx, "finish", s.u.Object)
	if errors.Is(err, errHold) {
		s.holding = true
		return nil
	}
	var o *wire.Object
	if apply {
		g.mu.Lock()
		sess := g.sessions[s.id]
		switch {
		case sess.cancelled:
			err = status.Error(codes.NotFound, "the session was cancelled")
		case sess.match != nil && *sess.match != g.liveGenLocked(sess.name):
			err = status.Error(codes.FailedPrecondition, "ifGenerationMatch")
		default:
			sess.obj = g.storeLocked(sess.name, slices.Clone(sess.data))
			o = sess.obj
		}
		g.mu.Unlock()
	}
	if err != nil {
		s.dead = true
		s.cancel()
		s.sink.Broke(err)
		return nil
	}
	s.ack(s.from, o)
	return nil
}

// ack reports to the session; an answer it does not accept breaks the
// stream.
func (s *fakeGCSStream) ack(persisted int64, o *wire.Object) {
	if err := s.sink.Ack(persisted, o, nil); err != nil {
		s.dead = true
		s.cancel()
		s.sink.Broke(err)
	}
}

func (s *fakeGCSStream) Idle() bool                 { return !s.holding }
func (s *fakeGCSStream) Behind() bool               { return s.from < s.want.Last || s.want.Final && !s.finSent }
func (s *fakeGCSStream) Broken() context.Context    { return s.ctx }
func (s *fakeGCSStream) Route() xfer.Route          { return 1 }
func (s *fakeGCSStream) Done(context.Context)       {}
func (s *fakeGCSStream) Teardown(cause error) error { s.cancel(); return cause }
