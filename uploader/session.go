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
	window   int         // chunks that may be in flight
	noCRC    bool
	uploadID string

	// Stream state, owned by the Writer's goroutine.
	stream    bidiStream
	sctx      context.Context // the stream's context; its cause tells an attempt timeout
	cancel    context.CancelCauseFunc
	broken    context.Context // done when the stream fails: see waitContext
	setBroken context.CancelFunc
	recvDone  chan struct{}
	fresh     bool      // the next message is the stream's first: it names the upload
	final     *chunkRef // the last chunk, once finish pushed it
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
		window:   w.c.inFlight,
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
	for {
		resp, err := st.Recv()
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
	s.pending = s.pending[i:]
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

// push takes over r, sends it, and then waits while more than the window of
// chunks is in flight. A transient failure is recovered from before push
// returns.
func (s *session) push(r *chunkRef) error {
	s.mu.Lock()
	s.pending = append(s.pending, r)
	from := max(s.persisted, r.Offset)
	s.mu.Unlock()
	if s.stream == nil {
		if err := s.recover(); err != nil {
			return err
		}
	} else if err := s.send(r, from); err != nil {
		if err := s.recoverFrom("BidiWriteObject", err); err != nil {
			return err
		}
	}
	return s.waitFor(func() bool { return len(s.pending) <= s.window })
}

// finish takes over the last chunk r, sends it with finish_write and the
// object's checksums, and returns the object the service stored.
func (s *session) finish(r *chunkRef, checksums *wire.ObjectChecksums) (*wire.Object, error) {
	s.final, s.checksums = r, checksums
	if err := s.push(r); err != nil {
		return nil, err
	}
	if s.stream != nil {
		if err := s.stream.CloseSend(); err != nil {
			if err := s.recoverFrom("BidiWriteObject", err); err != nil {
				return nil, err
			}
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
		select {
		case <-s.acked:
		case <-s.t.ctx.Done():
			return s.t.err("BidiWriteObject", s.t.ctx.Err())
		}
	}
}

// send writes r's bytes from offset from on the current stream, one message
// per 2 MiB piece of the chunk, each with its CRC32C; the chunk's last
// message asks for a flush and the persisted size, or finishes the upload.
func (s *session) send(r *chunkRef, from int64) error {
	rel := int(from - r.Offset)
	for {
		piece := rel / chunker.MaxPiece
		end := min((piece+1)*chunker.MaxPiece, len(r.Data))
		data := r.Data[rel:end]
		req := s.newRequest(r.Offset + int64(rel))
		last := end == len(r.Data)
		if last {
			if r == s.final {
				req.FinishWrite, req.ObjectChecksums = true, s.checksums
			} else {
				req.Flush, req.StateLookup = true, true
			}
		}
		msg := s.life.newMsg(r, data)
		msg.Req = req
		if !s.noCRC && len(data) > 0 {
			msg.HasCRC = true
			if rel == piece*chunker.MaxPiece {
				msg.CRC32C = r.PieceCRC32C(piece)
			} else {
				// A tail resent after a resume: checksum it afresh (the
				// fault path only).
				msg.CRC32C = crc32c.Checksum(data)
			}
		}
		s.armTimer()
		err := s.stream.SendMsg(&msg.WriteMsg)
		s.life.sent(msg)
		if err != nil {
			return err
		}
		if last {
			return nil
		}
		rel = end
	}
}

// sendFinish sends a finish_write message without data at offset.
func (s *session) sendFinish(offset int64) error {
	req := s.newRequest(offset)
	req.FinishWrite, req.ObjectChecksums = true, s.checksums
	s.armTimer()
	return s.stream.SendMsg(req)
}

// newRequest starts a message at offset; a stream's first names the upload.
func (s *session) newRequest(offset int64) *wire.BidiWriteObjectRequest {
	req := &wire.BidiWriteObjectRequest{WriteOffset: offset}
	if s.fresh {
		req.FirstMessage = &wire.BidiWriteObjectRequest_UploadId{UploadId: s.uploadID}
		s.fresh = false
	}
	return req
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
		resend := append([]*chunkRef(nil), s.pending...)
		s.mu.Unlock()
		if len(resend) > 0 && persisted < resend[0].Offset {
			return &Error{Op: "QueryWriteStatus", Bucket: t.bucket, Object: t.object, Code: codes.DataLoss,
				Err: fmt.Errorf("the service reports %d bytes persisted, below the %d it had acknowledged", persisted, resend[0].Offset)}
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
		for _, r := range resend {
			if err = s.send(r, max(persisted, r.Offset)); err != nil {
				break
			}
		}
		if err == nil && s.final != nil {
			if len(resend) == 0 || resend[len(resend)-1] != s.final {
				// Everything is persisted but the service never saw
				// finish_write: finish with an empty message.
				err = s.sendFinish(persisted)
			}
			if err == nil {
				err = s.stream.CloseSend()
			}
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
