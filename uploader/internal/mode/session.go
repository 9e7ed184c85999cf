package mode

import (
	"context"
	"sync"

	"github.com/objup/objup/uploader/internal/xfer"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/retry"
	"github.com/objup/objup/uploader/internal/window"
)

// doneCtx is an already cancelled context.
var doneCtx = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// resumable is a resumable upload above the transport seam, for both
// transports: it keeps the chunks pushed and not yet persisted, releases
// them as the service acknowledges them (one ack path), bounds the bytes in
// flight by its window, and after a failure asks the session's status and
// resumes on a new stream from the persisted offset (one recovery path).
// The stream (gRPC's BidiWriteObject, or the JSON API's PUTs) only sends
// and reports.
//
// Its methods run on the Writer's goroutine; the stream's goroutines call
// Ack and Broke, which touch only the fields under mu.
type resumable struct {
	svc      Services
	u        *xfer.Request
	tr       xfer.Transport
	retry    *retry.Engine
	ev       Events
	progress *Progress         // nil, or told of each new persisted size
	cp       xfer.Checkpointer // nil, or told of the session and what it persisted (see Checkpoint)
	id       string            // the session's id on the service
	route    xfer.Route        // where the session's streams went (see [xfer.Stream.Route])
	batch    []*xfer.ChunkRef  // the chunks a send hands the stream; their references are the session's
	ready    xfer.AppendStream // an appendable object's stream that appendStatus opened, for open
	readyAt  int64             // what the service had persisted when it opened
	names    *xfer.CallNames

	// Owned by the Writer's goroutine.
	st      xfer.Stream // the current stream; nil while broken
	final   bool        // the last chunk was pushed
	seen    int64       // persisted size at the last progress report to the retrier
	opened  int64       // the offset the current stream started at
	resumed bool        // a status query placed the current stream (see moved)
	// fromHandle: the session began in an earlier Writer (see Resume),
	// whose messages may still reach the service after this one's: the
	// service may hold more than this Writer pushed, and may finish the
	// session.
	fromHandle bool

	mu        sync.Mutex
	last      int64 // the end of the data pushed so far
	window    int64 // bytes that may be pushed and not yet persisted
	rounds    window.Rounds
	pending   []*xfer.ChunkRef // not yet persisted, in offset order
	persisted int64
	crcAt     int64  // the end of the chunks released so far, whose CRC32C is crc
	crc       uint32 // the CRC32C of the object's bytes up to crcAt
	resource  *wire.Object
	streamErr error         // why the current stream broke
	acked     chan struct{} // cap 1: a report came
	closed    bool
}

// Resume is where a session that an earlier Writer (or process) began
// goes on: its id, and the bytes the service persisted of it, from offset
// 0, with their CRC32C.
type Resume struct {
	Session   string
	Persisted int64
	CRC32C    uint32
}

// startResumable opens a resumable session for p's request (retried), or
// takes up the session from, and opens its first stream. p's Checkpoints,
// if not nil, is told of the session before any data goes out, and of
// what the service persists. The window starts at p's Window.Start, may
// grow to its Limit and shrink to its Floor (see package window), each as
// the transport counts it.
func startResumable(p *Params, from *Resume) (*resumable, error) {
	u, tr, r, cp := p.Request, p.Transport, p.Engine, p.Checkpoints
	floor, window, maxWindow := tr.Window(p.Window.Floor), tr.Window(p.Window.Start), tr.Window(p.Window.Limit)
	s := &resumable{svc: p.Services, u: u, tr: tr, retry: r, ev: p.Events, window: window, progress: p.Progress, cp: cp, acked: make(chan struct{}, 1)}
	s.rounds.Init(floor, window, maxWindow)
	s.names = tr.Names()
	if from != nil {
		s.id = from.Session
		s.last, s.persisted, s.seen = from.Persisted, from.Persisted, from.Persisted
		s.crcAt, s.crc = from.Persisted, from.CRC32C
		// A status query placed the stream (see moved): a message of
		// the earlier Writer's still on its way may move the session on.
		s.resumed, s.fromHandle = true, true
	} else {
		err := do(r, &u.Target, s.names.Start, true, nil, func() (string, bool, error) {
			id, err := tr.StartUpload(u, r.AttemptTimeout())
			u.NoteRefusal(err)
			s.id = id
			return "", true, err
		})
		if err != nil {
			return nil, err
		}
		r.Progress()
	}
	if cp != nil {
		at, crc := s.crcAt, s.crc
		if err := cp.Update(func(c *xfer.Checkpoint) { c.Session, c.Persisted, c.CRC32C = s.id, at, crc }, true); err != nil {
			return nil, &xfer.OpError{Op: s.names.Start, Bucket: u.Bucket, Object: u.Object, Code: xfer.CodeOf(err), Err: err}
		}
	}
	s.rounds.Begin(window)
	if err := s.open(s.persisted); err != nil {
		// A stream that cannot open is resumed like a broken one.
		if err := s.recoverFrom(s.names.Stream, err); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// open opens the session's stream from persisted on.
func (s *resumable) open(persisted int64) error {
	var st xfer.Stream
	var err error
	if s.u.App != nil {
		st, err = s.openAppendStream(persisted, s.retry.Config().Limits.AttemptTimeout)
	} else {
		st, err = s.tr.OpenStream(s.u, s.id, s.route, persisted, s, s.retry.Config().Limits.AttemptTimeout)
	}
	if err != nil {
		return err
	}
	s.st, s.route, s.opened = st, st.Route(), persisted
	return nil
}

// sendOn has the stream st send what is due (see xfer.Stream.Send): what
// the session has pushed, and the chunks that hold the data from where st
// stands on.
func (s *resumable) sendOn(st xfer.Stream, all bool) error {
	from := st.From()
	s.mu.Lock()
	p := xfer.Pushed{Last: s.last, Final: s.final, Persisted: s.persisted, Window: s.window}
	rs := s.batch[:0]
	for _, r := range s.pending {
		if r.End() > from {
			rs = append(rs, r)
		}
	}
	s.mu.Unlock()
	p.Timeout = s.retry.AttemptTimeout()
	err := st.Send(p, rs, all)
	clear(rs)
	s.batch = rs[:0] // keep the capacity for the next send
	return err
}

// Ack takes in the service's answer: persisted bytes, and the finished
// object if there is one. It releases the chunks the service persisted,
// wakes the Writer, and reports the progress, once the lock is released.
// A stream calls it from its own goroutine.
func (s *resumable) Ack(persisted int64, o *wire.Object, handle []byte) error {
	if handle != nil {
		s.u.App.NewHandle(handle)
	}
	s.mu.Lock()
	if o != nil && s.resource == nil {
		s.resource = o
	}
	before := s.crcAt
	err := s.ackLocked(persisted)
	at, crc := s.crcAt, s.crc
	moved := at != before
	s.mu.Unlock()
	s.Signal()
	if err == nil {
		s.progress.Report(persisted)
		if moved && s.cp != nil {
			_ = s.cp.Update(func(c *xfer.Checkpoint) {
				if at > c.Persisted {
					c.Persisted, c.CRC32C = at, crc
				}
			}, false)
		}
	}
	return err
}

// persistedNow returns the bytes the service acknowledged.
func (s *resumable) persistedNow() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.persisted
}

// ackLocked releases the chunks up to persisted. s.mu is held.
func (s *resumable) ackLocked(persisted int64) error {
	switch {
	case persisted == s.persisted:
		return nil
	case persisted < s.persisted:
		return status.Errorf(codes.DataLoss, "the service reports %d bytes persisted, below the %d it had acknowledged", persisted, s.persisted)
	case persisted > s.last && s.fromHandle && !s.final:
		// An earlier Writer's message arrived: the stream gives way to a
		// recovery, whose status query skips what the service holds
		// (see skipAheadLocked).
		return errServiceAhead
	case persisted > s.last:
		return status.Errorf(codes.Internal, "the service reports %d bytes persisted, more than the %d sent", persisted, s.last)
	}
	s.persisted = persisted
	i := 0
	for ; i < len(s.pending) && s.pending[i].End() <= persisted; i++ {
		s.releaseLocked(s.pending[i])
		s.pending[i] = nil
	}
	// Move the rest to the front, so appends keep reusing the array.
	n := copy(s.pending, s.pending[i:])
	clear(s.pending[n:])
	s.pending = s.pending[:n]
	s.window = s.rounds.Acked(persisted, s.last, s.window)
	return nil
}

// report tells the retrier that the service persisted more: a failure
// episode ends with progress.
func (s *resumable) report(persisted int64) {
	if persisted > s.seen {
		s.seen = persisted
		s.retry.Progress()
	}
}

// Broke records why the current stream failed, and the new route of an
// appendable object's redirect. A stream calls it from its own goroutine,
// once, before the stream's Teardown returns.
func (s *resumable) Broke(err error) {
	if s.u.App != nil {
		s.u.App.Redirected(err, s.u.Life.Ev)
	}
	s.mu.Lock()
	s.streamErr = err
	s.mu.Unlock()
	s.Signal()
}

func (s *resumable) Signal() {
	select {
	case s.acked <- struct{}{}:
	default:
	}
}

// push takes over r, has the stream send what is due, and then waits while
// more than the window is pushed and not persisted. A transient failure is
// recovered from before push returns.
func (s *resumable) push(r *xfer.ChunkRef) error {
	s.take(r)
	if err := s.send(false); err != nil {
		return err
	}
	return s.waitFor(s.inWindow)
}

// inWindow reports whether what is pushed and not persisted fits the
// window; when it does not, the round is window-limited. s.mu is held.
func (s *resumable) inWindow() bool {
	if s.last-s.persisted <= s.window {
		return true
	}
	s.rounds.Limited()
	return false
}

// contended tells the session that the Writer found no free buffer: the
// pool's budget is shared with other uploads, so the window gives way.
func (s *resumable) contended() {
	s.mu.Lock()
	s.window = s.rounds.Shrink(s.window)
	s.mu.Unlock()
}

// startAt makes the session go on from persisted, the size of the
// appendable object it took over: nothing was pushed yet.
func (s *resumable) startAt(persisted int64) {
	s.mu.Lock()
	s.last, s.persisted, s.seen = persisted, persisted, persisted
	s.crcAt = -1 // the CRC32C of what the object holds is not tracked
	s.mu.Unlock()
}

// aheadNow reports whether the service holds every byte pushed so far,
// and more, or all of them before the last chunk: there is no stream then
// (see skipAhead).
func (s *resumable) aheadNow() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fromHandle && !s.final && s.last <= s.persisted && s.resource == nil
}

// lastNow returns the end of the data pushed so far.
func (s *resumable) lastNow() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// take makes the session the owner of r: close drops its reference
// whatever happens next.
func (s *resumable) take(r *xfer.ChunkRef) {
	s.mu.Lock()
	s.last = r.End()
	if r.End() <= s.persisted && len(s.pending) == 0 && len(r.Data) > 0 {
		// The service holds these bytes already: an earlier Writer's
		// (see skipAhead).
		s.releaseLocked(r)
	} else {
		s.pending = append(s.pending, r)
	}
	s.mu.Unlock()
}

// releaseLocked drops the session's reference to r, which the service
// persisted. s.mu is held.
func (s *resumable) releaseLocked(r *xfer.ChunkRef) {
	if r.Offset == s.crcAt {
		s.crc = crc32c.Combine(s.crc, r.CRC32C, int64(len(r.Data)))
		s.crcAt = r.End()
	}
	r.Unref()
}

// flush sends what was pushed and not sent yet, for a Writer about to wait
// for a buffer: the chunks it holds come back only once sent and persisted.
func (s *resumable) flush() error {
	if s.st == nil || !s.st.Behind() {
		return nil
	}
	return s.send(true)
}

// send has the stream send what is due, resuming after a failure.
func (s *resumable) send(all bool) error {
	if s.st == nil && s.aheadNow() {
		// The service holds more than was pushed (see skipAhead): nothing
		// to send until the Writer's data passes it.
		return nil
	}
	if s.st == nil {
		return s.recover()
	}
	if err := s.sendOn(s.st, all); err != nil {
		return s.recoverFrom(s.names.Stream, err)
	}
	return nil
}

// finish takes over the last chunk r, sends everything and the finish with
// the object's checksums (u.checksums()), and returns the object the
// service stored.
func (s *resumable) finish(r *xfer.ChunkRef) (*wire.Object, error) {
	s.take(r)
	s.final = true
	if err := s.send(true); err != nil {
		return nil, err
	}
	if err := s.waitFor(func() bool { return s.resource != nil }); err != nil {
		return nil, err
	}
	s.mu.Lock()
	o := s.resource
	s.mu.Unlock()
	if s.st != nil {
		// The upload is over on both sides when Close returns.
		s.st.Done(s.u.Ctx)
	}
	return o, nil
}
