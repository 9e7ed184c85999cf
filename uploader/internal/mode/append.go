package mode

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/retry"
	"github.com/objup/objup/uploader/internal/xfer"
)

// Append is the mode of an appendable object (the request's App): a
// session on the object's BidiWriteObject stream that flushes, and whose
// finish finalizes the object or leaves it open.
type Append struct{ session }

// NewAppend returns the mode of p's appendable object.
func NewAppend(p Params) *Append { return &Append{session{Params: p}} }

// Start opens the object's stream, once; a takeover opens it before the
// first Write.
func (m *Append) Start() error { return m.start() }

// StartAt makes the session go on from persisted, the size of the
// appendable object it took over: nothing was pushed yet.
func (m *Append) StartAt(persisted int64) { m.s.startAt(persisted) }

// Flush hands c over and waits, as ctx allows, until the service has
// persisted everything written; it returns the persisted size. A failure
// of the wait alone is a *FlushWait.
func (m *Append) Flush(ctx context.Context, c chunker.Chunk) (int64, error) {
	u := m.Request
	if err := m.start(); err != nil {
		u.Life.PutBuffer(c.Buf)
		return 0, err
	}
	s := m.s
	if len(c.Data) == 0 {
		// Nothing new: the buffer goes back, and the flush asks only
		// what is persisted.
		u.Life.PutBuffer(c.Buf)
	} else {
		s.take(u.Life.NewRef(smallFlush(u, c)))
	}
	if err := s.send(true); err != nil {
		return 0, err
	}
	last := s.lastNow()
	if err := s.waitIn(ctx, func() bool { return s.persisted >= last }); err != nil {
		return s.persistedNow(), &FlushWait{err}
	}
	return s.persistedNow(), nil
}

// FlushWait is the failure of a flush's wait for the service: its context
// ended, or the upload's did.
type FlushWait struct{ Err error }

// Error returns the cause's text.
func (e *FlushWait) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *FlushWait) Unwrap() error { return e.Err }

// Path is PathAppendable.
func (*Append) Path() string { return PathAppendable }

// flushCopy is the most a Flush copies out of its chunk buffer.
const flushCopy = 32 << 10

// smallFlush returns c, or, when it holds a few bytes (up to flushCopy) of
// a Flush, a copy of them in memory of their size, giving c's chunk buffer
// back at once: a writer that appends and flushes small records then holds
// a chunk buffer only between a Write and its Flush, not for the round
// trip to the service, and the pool's buffers are not churned.
func smallFlush(u *xfer.Request, c chunker.Chunk) chunker.Chunk {
	if c.Buf == nil || len(c.Data) > flushCopy {
		return c
	}
	small := make([]byte, len(c.Data))
	copy(small, c.Data)
	u.Life.PutBuffer(c.Buf)
	c.Buf, c.Data = nil, small
	return c
}

// Finish ends an appendable object's upload at Close: the rest goes out
// and the object is finalized with its checksums, or, when it is to stay
// unfinalized, flushed and left open.
func (m *Append) Finish(last chunker.Chunk) (*wire.Object, error) {
	u := m.Request
	r := u.Life.NewRef(last)
	if err := m.start(); err != nil {
		r.Unref()
		return nil, err
	}
	s := m.s
	a := u.App
	if !a.Unfinalized {
		o, err := s.finish(r)
		if err != nil && retry.AnswerLost(err) {
			// The finish may have finalized the object: its generation,
			// the object's identity, is looked up.
			err = s.teardown(err)
			a.Mu.Lock()
			gen := a.Gen
			a.Mu.Unlock()
			o, err = m.finalizedAt(gen, err)
		}
		return o, err
	}
	s.take(r)
	if err := s.send(true); err != nil {
		return nil, err
	}
	end := s.lastNow()
	if err := s.waitFor(func() bool { return s.persisted >= end }); err != nil {
		return nil, err
	}
	a.Mu.Lock()
	defer a.Mu.Unlock()
	o := &wire.Object{Name: u.Object, Bucket: u.Resource(), Generation: a.Gen}
	if a.Object != nil {
		o = proto.Clone(a.Object).(*wire.Object)
	}
	o.Size, o.Checksums = end, nil
	return o, nil
}

// finalizedAt is the end of an appendable upload whose finish failed with
// err after its answer may have been lost: the object's generation gen is
// its identity, so the live object is looked up and returned if it is that
// generation, finalized. Otherwise err is returned, marked unknown: the
// finish may still be applied.
func (m *Append) finalizedAt(gen int64, err error) (*wire.Object, error) {
	u, tr := m.Request, m.Transport
	if gen != 0 {
		if o := lookup(m.Services, u, tr, m.Engine.Config()); o.GetGeneration() == gen && o.GetFinalizeTime() != nil {
			return o, nil
		}
	}
	oe := xfer.Fail(&u.Target, tr.Names().Stream, err)
	oe.Unknown = true
	return nil, oe
}
