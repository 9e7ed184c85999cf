package uploader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/internal/wire"
)

type bidiStream = grpc.BidiStreamingClient[wire.BidiWriteObjectRequest, wire.BidiWriteObjectResponse]

// doneCtx is an already cancelled context.
var doneCtx = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// session is a resumable upload: chunks stream on BidiWriteObject, each
// flushed with a state lookup, and a receiver goroutine turns the service's
// persisted sizes into released chunks. After a transient failure the session
// asks QueryWriteStatus where the service stands and resends what it still
// holds.
//
// The session owns its streams and the chunks it was handed; it shares with
// its Writer only what the Writer passes in: the RPC target, the chunk
// lifetimes, the retry engine and the progress callback. Its methods run on
// the Writer's goroutine; the receiver touches only the fields under mu.
type session struct {
	t        *target
	life     *lifetime
	ev       *uploadEvents
	retry    *retrier
	progress func(int64) // nil, or called with each new persisted size
	window   int64       // bytes that may be pushed and not yet persisted
	noCRC    bool
	uploadID string

	// Stream state, owned by the Writer's goroutine.
	stream    bidiStream
	sctx      context.Context // the stream's context; its cause tells an attempt timeout
	cancel    context.CancelCauseFunc
	broken    context.Context // done when the stream fails: see waitContext
	setBroken context.CancelFunc
	recvDone  chan struct{}
	fresh     bool        // the next message is the stream's first: it names the upload
	sentTo    int64       // the offset up to which data went out on the current stream
	last      int64       // the end of the data pushed so far
	batch     []*chunkRef // scratch: the chunks a send goes through
	final     *chunkRef   // the last chunk, once finish pushed it
	checksums *wire.ObjectChecksums
	timer     *time.Timer
	seen      int64 // persisted size at the last progress report to the retrier

	mu        sync.Mutex
	pending   []*chunkRef // not yet persisted, in offset order
	persisted int64
	resource  *wire.Object
	recvErr   error
	acked     chan struct{} // cap 1: the receiver made progress
	closed    bool
}

// startSession opens a resumable session for the Writer's object; first is
// the start of the data, for content sniffing.
func (w *Writer) startSession(first []byte) (*session, error) {
	s := &session{
		t:        &w.target,
		life:     &w.life,
		ev:       &w.ev,
		retry:    &w.retry,
		progress: w.cfg.progress,
		window:   w.c.window(w.ch.ChunkSize()),
		noCRC:    w.cfg.noCRC32C,
		acked:    make(chan struct{}, 1),
	}
	req := &wire.StartResumableWriteRequest{WriteObjectSpec: w.spec(first, -1)}
	for {
		var resp wire.StartResumableWriteResponse
		err := w.invoke(wire.MethodStartResumableWrite, req, &resp, w.retry.attemptTimeout())
		if err == nil {
			w.retry.progress()
			s.uploadID = resp.GetUploadId()
			break
		}
		if err = w.retry.retry(w.ctx, "StartResumableWrite", err, true, true); err != nil {
			return nil, w.target.err("StartResumableWrite", err)
		}
	}
	if err := s.open(); err != nil {
		// A stream that cannot open is resumed like a broken one.
		if err := s.recoverFrom("BidiWriteObject", err); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// open opens a new BidiWriteObject stream and its receiver.
func (s *session) open() error {
	ctx, cancel := context.WithCancelCause(s.t.ctx)
	st, err := wire.NewBidiWriteObjectStream(s.t.outgoing(ctx), s.t.c.conn, s.t.c.callOpts...)
	if err != nil {
		cancel(err)
		return err
	}
	s.stream, s.sctx, s.cancel, s.fresh = st, ctx, cancel, true
	s.broken, s.setBroken = context.WithCancel(s.t.ctx)
	s.recvDone = make(chan struct{})
	s.mu.Lock()
	s.recvErr = nil
	s.mu.Unlock()
	s.timer = time.AfterFunc(s.retry.cfg.attemptTimeout, func() { cancel(errChunkTimeout) })
	s.timer.Stop()
	go s.receive(st, s.recvDone, s.setBroken)
	return nil
}

// waitContext returns a context that ends when the current stream fails (or
// the upload's context ends), for the Writer's waits for a buffer: while the
// stream is broken, chunks come back only after recover.
func (s *session) waitContext() context.Context {
	if s.stream == nil {
		return doneCtx
	}
	return s.broken
}

// teardown cancels the current stream and waits for its receiver.
func (s *session) teardown(cause error) {
	if s.stream == nil {
		return
	}
	s.timer.Stop()
	s.cancel(cause)
	<-s.recvDone
	s.setBroken()
	s.stream, s.broken = nil, nil
}

// receive reads the service's answers until the stream ends.
func (s *session) receive(st bidiStream, done chan struct{}, broken context.CancelFunc) {
	defer close(done)
	// One response message serves the whole stream: what the receiver keeps
	// of it (the finished object) is a message of its own, which Reset
	// leaves alone.
	resp := new(wire.BidiWriteObjectResponse)
	for {
		resp.Reset()
		err := st.RecvMsg(resp)
		s.mu.Lock()
		if err != nil {
			if err == io.EOF && s.resource == nil {
				err = fmt.Errorf("the service ended the stream before the upload finished: %w", io.ErrUnexpectedEOF)
			}
			s.recvErr = err
			s.mu.Unlock()
			broken()
			s.signal()
			return
		}
		switch ws := resp.GetWriteStatus().(type) {
		case *wire.BidiWriteObjectResponse_PersistedSize:
			s.ackLocked(ws.PersistedSize)
		case *wire.BidiWriteObjectResponse_Resource:
			s.resource = ws.Resource
			s.ackLocked(ws.Resource.GetSize())
		}
		s.mu.Unlock()
		s.signal()
	}
}

func (s *session) signal() {
	select {
	case s.acked <- struct{}{}:
	default:
	}
}

// ackLocked releases the chunks the service has persisted. s.mu is held.
func (s *session) ackLocked(persisted int64) {
	if persisted <= s.persisted {
		return
	}
	s.persisted = persisted
	i := 0
	for ; i < len(s.pending) && s.pending[i].end() <= persisted; i++ {
		s.pending[i].unref()
		s.pending[i] = nil
	}
	// Move the rest to the front, so appends keep reusing the array.
	n := copy(s.pending, s.pending[i:])
	clear(s.pending[n:])
	s.pending = s.pending[:n]
	if s.timer != nil {
		if len(s.pending) == 0 {
			s.timer.Stop()
		} else {
			s.timer.Reset(s.retry.cfg.attemptTimeout)
		}
	}
	if s.progress != nil {
		s.progress(persisted)
	}
}

// push takes over r, sends what makes whole messages of 2 MiB, and then
// waits while more than the window is pushed and not persisted (sending the
// rest first). A transient failure is recovered from before push returns.
func (s *session) push(r *chunkRef) error {
	s.mu.Lock()
	s.pending = append(s.pending, r)
	s.mu.Unlock()
	s.last = r.end()
	if s.stream == nil {
		if err := s.recover(); err != nil {
			return err
		}
	} else if err := s.send(false); err != nil {
		if err := s.recoverFrom("BidiWriteObject", err); err != nil {
			return err
		}
	}
	return s.waitFor(func() bool { return s.last-s.persisted <= s.window })
}

// flush sends what was pushed and not sent yet, for a Writer about to wait
// for a buffer: the chunks it holds come back only once sent and persisted.
func (s *session) flush() error {
	if s.stream == nil || s.sentTo >= s.last {
		return nil
	}
	if err := s.send(true); err != nil {
		return s.recoverFrom("BidiWriteObject", err)
	}
	return nil
}

// finish takes over the last chunk r, sends everything with finish_write and
// the object's checksums, and returns the object the service stored.
func (s *session) finish(r *chunkRef, checksums *wire.ObjectChecksums) (*wire.Object, error) {
	s.final, s.checksums = r, checksums
	s.mu.Lock()
	s.pending = append(s.pending, r)
	s.mu.Unlock()
	s.last = r.end()
	if s.stream == nil {
		if err := s.recover(); err != nil {
			return nil, err
		}
	} else if err := s.sendAll(); err != nil {
		if err := s.recoverFrom("BidiWriteObject", err); err != nil {
			return nil, err
		}
	}
	if err := s.waitFor(func() bool { return s.resource != nil }); err != nil {
		return nil, err
	}
	s.mu.Lock()
	o := s.resource
	s.mu.Unlock()
	// The stream ends right after the object: wait for its status, so the
	// upload is over on both sides when Close returns.
	if s.stream != nil {
		select {
		case <-s.recvDone:
		case <-s.t.ctx.Done():
		}
	}
	return o, nil
}

// waitFor waits until cond holds (evaluated under s.mu), recovering from
// stream failures on the way.
func (s *session) waitFor(cond func() bool) error {
	for {
		s.mu.Lock()
		ok, rerr, persisted := cond(), s.recvErr, s.persisted
		s.mu.Unlock()
		idle := s.sentTo <= persisted // nothing sent awaits an acknowledgement
		if persisted > s.seen {
			s.seen = persisted
			s.retry.progress()
		}
		if ok {
			return nil
		}
		if rerr != nil || s.stream == nil {
			if err := s.recover(); err != nil {
				return err
			}
			continue
		}
		// No acknowledgement will come while nothing sent awaits one:
		// send what was kept back. Otherwise wait for the acknowledgement,
		// so the next chunks can still fill a 2 MiB message.
		if idle && s.sentTo < s.last {
			if err := s.flush(); err != nil {
				return err
			}
			continue
		}
		select {
		case <-s.acked:
		case <-s.t.ctx.Done():
			return s.t.err("BidiWriteObject", s.t.ctx.Err())
		}
	}
}

// send sends the data pushed and not yet sent on the current stream, from
// sentTo, in messages of up to 2 MiB made of consecutive chunks (each chunk
// a part of the message, not copied), each with its CRC32C combined from
// the chunks' and a flush and state lookup. Unless all is set it sends only
// whole 2 MiB messages and keeps the rest for later.
func (s *session) send(all bool) error {
	if s.sentTo >= s.last {
		return nil
	}
	s.mu.Lock()
	batch := s.batch[:0]
	for _, r := range s.pending {
		if r.end() > s.sentTo {
			batch = append(batch, r)
		}
	}
	s.mu.Unlock()
	s.batch = batch // keep the capacity for the next send
	defer clear(batch)
	for len(batch) > 0 && s.sentTo < s.last && (all || s.last-s.sentTo >= maxMessage) {
		msg, req := s.life.newStreamMsg()
		start, size := s.sentTo, 0
		var crc uint32
		for len(batch) > 0 && msg.parts() < maxParts {
			r := batch[0]
			rel := int(s.sentTo - r.Offset)
			piece := rel / chunker.MaxPiece
			end := min((piece+1)*chunker.MaxPiece, len(r.Data))
			data := r.Data[rel:end]
			if size > 0 && size+len(data) > maxMessage {
				break
			}
			if !s.noCRC {
				pc := r.PieceCRC32C(piece)
				if rel != piece*chunker.MaxPiece {
					// A tail resent after a resume: checksum it afresh
					// (the fault path only).
					pc = crc32c.Checksum(data)
				}
				crc = crc32c.Combine(crc, pc, int64(len(data)))
			}
			s.life.add(msg, r, data)
			size += len(data)
			s.sentTo += int64(len(data))
			if end == len(r.Data) {
				batch = batch[1:]
			}
		}
		s.startRequest(req, start)
		req.Flush, req.StateLookup = true, true
		msg.CRC32C, msg.HasCRC = crc, !s.noCRC
		s.armTimer()
		err := s.stream.SendMsg(&msg.WriteMsg)
		s.life.sent(msg)
		if err != nil {
			return err
		}
	}
	return nil
}

// sendAll sends everything pushed, then finish_write with the object's
// checksums, and half-closes the stream.
func (s *session) sendAll() error {
	if err := s.send(true); err != nil {
		return err
	}
	req := s.newRequest(s.last)
	req.FinishWrite, req.ObjectChecksums = true, s.checksums
	s.armTimer()
	if err := s.stream.SendMsg(req); err != nil {
		return err
	}
	return s.stream.CloseSend()
}

// newRequest starts a message at offset; a stream's first names the upload.
func (s *session) newRequest(offset int64) *wire.BidiWriteObjectRequest {
	req := new(wire.BidiWriteObjectRequest)
	s.startRequest(req, offset)
	return req
}

// startRequest fills req as a message at offset.
func (s *session) startRequest(req *wire.BidiWriteObjectRequest, offset int64) {
	req.WriteOffset = offset
	if s.fresh {
		req.FirstMessage = &wire.BidiWriteObjectRequest_UploadId{UploadId: s.uploadID}
		s.fresh = false
	}
}

// armTimer restarts the attempt timeout before a send.
func (s *session) armTimer() {
	s.mu.Lock()
	s.timer.Reset(s.retry.cfg.attemptTimeout)
	s.mu.Unlock()
}

// recover resumes the session after its stream failed.
func (s *session) recover() error {
	s.mu.Lock()
	cause := s.recvErr
	s.mu.Unlock()
	if cause == nil {
		cause = fmt.Errorf("stream closed: %w", io.ErrUnexpectedEOF)
	}
	return s.recoverFrom("BidiWriteObject", cause)
}

// recoverFrom resumes the session after cause, an error of op, broke the
// stream: it waits out the backoff, asks the service how much it persisted,
// releases that, opens a new stream and resends the rest. It gives up on
// errors the retrier does not retry, and when the retry budget is spent,
// with an error that names the operation that failed last.
func (s *session) recoverFrom(op string, cause error) error {
	t := s.t
	for {
		if s.stream != nil {
			if errors.Is(context.Cause(s.sctx), errChunkTimeout) {
				// gRPC reports our own cancellation as a plain Canceled.
				cause = errChunkTimeout
			} else if cause == io.EOF {
				// SendMsg reports a broken stream as io.EOF; the reason is
				// the stream's status, which the receiver gets.
				<-s.recvDone
				s.mu.Lock()
				cause = s.recvErr
				s.mu.Unlock()
			}
		}
		s.teardown(cause)
		if err := s.retry.retry(t.ctx, op, cause, true, true); err != nil {
			return t.err(op, err)
		}
		var st wire.QueryWriteStatusResponse
		err := t.invoke(wire.MethodQueryWriteStatus, &wire.QueryWriteStatusRequest{UploadId: s.uploadID}, &st, s.retry.attemptTimeout())
		if err != nil {
			op, cause = "QueryWriteStatus", err
			continue
		}
		// A call that completed after the old stream was torn down proves
		// gRPC's writer went past that stream's messages.
		s.ev.forced(s.life.forceRelease())
		s.mu.Lock()
		if o := st.GetResource(); o != nil {
			s.resource = o
			s.ackLocked(o.GetSize())
			s.mu.Unlock()
			return nil
		}
		s.ackLocked(st.GetPersistedSize())
		persisted := s.persisted
		var first int64 = -1
		if len(s.pending) > 0 {
			first = s.pending[0].Offset
		}
		s.mu.Unlock()
		if persisted < first {
			return &Error{Op: "QueryWriteStatus", Bucket: t.bucket, Object: t.object, Code: codes.DataLoss,
				Err: fmt.Errorf("the service reports %d bytes persisted, below the %d it had acknowledged", persisted, first)}
		}
		if persisted > s.seen {
			s.seen = persisted
			s.retry.progress()
		}
		if err := s.open(); err != nil {
			op, cause = "BidiWriteObject", err
			continue
		}
		op = "BidiWriteObject"
		// Resend everything the service does not have, then finish if the
		// upload had come that far.
		s.sentTo = persisted
		if s.final != nil {
			err = s.sendAll()
		} else {
			err = s.send(true)
		}
		if err != nil {
			cause = err
			continue
		}
		s.ev.resumed(persisted, cause)
		return nil
	}
}

// abort abandons the session: the stream is cancelled and never finalized.
func (s *session) abort(cause error) {
	s.teardown(cause)
}

// close ends the session's stream and drops the session's hold on every
// chunk still pending; gRPC lets go of its own when the stream is torn down.
func (s *session) close() {
	s.teardown(errors.New("upload closed"))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	for i, r := range s.pending {
		r.unref()
		s.pending[i] = nil
	}
	s.pending = nil
}
