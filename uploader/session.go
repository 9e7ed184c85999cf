package uploader

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/objup/objup/internal/wire"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type bidiStream = grpc.BidiStreamingClient[wire.BidiWriteObjectRequest, wire.BidiWriteObjectResponse]

// session is a resumable upload: chunks stream on BidiWriteObject, each flushed
// with a state lookup, and a receiver goroutine turns the service's persisted
// sizes into released chunks. After a transient failure the session asks
// QueryWriteStatus where the service stands and resends what it still holds.
type session struct {
	w        *Writer
	uploadID string

	// Stream state, owned by the Writer's goroutine.
	stream    bidiStream
	sctx      context.Context // the stream's context; its cause tells a chunk timeout
	cancel    context.CancelCauseFunc
	getCtx    context.Context // cancelled when the stream fails: see getter
	getCancel context.CancelFunc
	recvDone  chan struct{}
	fresh     bool // the next message is the stream's first: it names the upload
	finishing bool // the final chunk was pushed: a resumed stream must finish
	timer     *time.Timer
	sent      []*outMsg // messages with data on this stream, not yet acknowledged

	mu        sync.Mutex
	pending   []*chunkRef // not yet persisted, in offset order
	persisted int64
	resource  *wire.Object
	recvErr   error
	acked     chan struct{} // cap 1: the receiver made progress
	closed    bool
}

// startSession opens a resumable session for the Writer's object.
func (w *Writer) startSession(first []byte) (*session, error) {
	req := &wire.StartResumableWriteRequest{WriteObjectSpec: w.spec(first, -1)}
	bo := newBackoff(w.c.retry)
	for {
		var resp wire.StartResumableWriteResponse
		err := w.c.conn.Invoke(w.outgoing(w.ctx), wire.MethodStartResumableWrite, req, &resp, w.c.callOpts...)
		if err == nil {
			s := &session{w: w, uploadID: resp.GetUploadId(), acked: make(chan struct{}, 1)}
			if err := s.open(); err != nil {
				return nil, err
			}
			return s, nil
		}
		if !w.retryable(err) {
			return nil, newError("StartResumableWrite", w.bucket, w.object, err)
		}
		if berr := bo.wait(w.ctx); berr != nil {
			return nil, newError("StartResumableWrite", w.bucket, w.object, fmt.Errorf("%w (retrying after: %v)", berr, err))
		}
	}
}

// open opens a new BidiWriteObject stream and its receiver.
func (s *session) open() error {
	ctx, cancel := context.WithCancelCause(s.w.ctx)
	st, err := wire.NewBidiWriteObjectStream(s.w.outgoing(ctx), s.w.c.conn, s.w.c.callOpts...)
	if err != nil {
		cancel(err)
		return newError("BidiWriteObject", s.w.bucket, s.w.object, err)
	}
	s.stream, s.sctx, s.cancel, s.fresh = st, ctx, cancel, true
	s.getCtx, s.getCancel = context.WithCancel(s.w.ctx)
	s.recvDone = make(chan struct{})
	s.mu.Lock()
	s.recvErr = nil
	s.mu.Unlock()
	if t := s.w.c.retry.ChunkTimeout; t > 0 {
		s.timer = time.AfterFunc(t, func() { cancel(errChunkTimeout) })
		s.timer.Stop()
	}
	go s.receive(st, s.recvDone, s.getCancel)
	return nil
}

// teardown cancels the current stream and waits for its receiver.
func (s *session) teardown(cause error) {
	if s.stream == nil {
		return
	}
	if s.timer != nil {
		s.timer.Stop()
	}
	s.cancel(cause)
	<-s.recvDone
	s.getCancel()
	s.stream, s.getCtx = nil, nil
	for _, m := range s.sent {
		s.w.orphan(m)
	}
	s.sent = nil
}

// receive reads the service's answers until the stream ends.
func (s *session) receive(st bidiStream, done chan struct{}, failed context.CancelFunc) {
	defer close(done)
	for {
		resp, err := st.Recv()
		s.mu.Lock()
		if err != nil {
			if err == io.EOF && s.resource == nil {
				err = &Error{Op: "BidiWriteObject", Code: codes.Unavailable, Err: io.ErrUnexpectedEOF}
			}
			s.recvErr = err
			s.mu.Unlock()
			failed()
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
			s.timer.Reset(s.w.c.retry.ChunkTimeout)
		}
	}
	if p := s.w.cfg.progress; p != nil {
		p(persisted)
	}
}

// push sends a chunk and then waits while more than the allowed chunks are in
// flight. A transient failure is recovered from before push returns.
func (s *session) push(r *chunkRef) error {
	s.mu.Lock()
	s.pending = append(s.pending, r)
	from := max(s.persisted, r.off)
	s.mu.Unlock()
	if err := s.send(r, from); err != nil {
		if err := s.recover(err); err != nil {
			return err
		}
	}
	return s.waitFor(func() bool { return len(s.pending) <= s.w.c.inFlight })
}

// finish sends the last chunk with finish_write and waits for the object.
func (s *session) finish(r *chunkRef) error {
	r.final = true
	s.finishing = true
	if err := s.push(r); err != nil {
		return err
	}
	if err := s.stream.CloseSend(); err != nil {
		if err := s.recover(err); err != nil {
			return err
		}
	}
	if err := s.waitFor(func() bool { return s.resource != nil }); err != nil {
		return err
	}
	s.mu.Lock()
	o := s.resource
	s.mu.Unlock()
	// The stream ends right after the object: wait for its status, so the
	// upload is over on both sides when Close returns.
	if s.stream != nil {
		select {
		case <-s.recvDone:
		case <-s.w.ctx.Done():
		}
	}
	return s.w.finished(o, s.w.ch.Size())
}

// waitFor waits until cond holds (evaluated under s.mu), recovering from stream
// failures on the way.
func (s *session) waitFor(cond func() bool) error {
	for {
		s.mu.Lock()
		ok, rerr := cond(), s.recvErr
		s.mu.Unlock()
		if ok {
			return nil
		}
		if rerr != nil {
			if err := s.recover(rerr); err != nil {
				return err
			}
			continue
		}
		select {
		case <-s.acked:
		case <-s.w.ctx.Done():
			return newError("BidiWriteObject", s.w.bucket, s.w.object, s.w.ctx.Err())
		}
	}
}

// send writes r's bytes from offset from on the current stream, in messages of
// at most maxMessage bytes; the chunk's last message asks for a flush and the
// persisted size, or finishes the upload.
func (s *session) send(r *chunkRef, from int64) error {
	data := r.data[from-r.off:]
	whole := from == r.off
	for {
		n := min(len(data), maxMessage)
		last := n == len(data)
		req := s.newRequest(from)
		if last {
			if r.final {
				req.FinishWrite = true
				req.ObjectChecksums = s.w.checksums()
			} else {
				req.Flush, req.StateLookup = true, true
			}
		}
		msg := newOutMsg(r)
		msg.Req = req
		switch {
		case s.w.cfg.noCRC32C:
		case n == len(r.data):
			// The message is the whole chunk: its CRC is the chunk's.
			msg.CRC32C, msg.HasCRC = r.crc, true
		case !whole && last:
			// A resent tail: checksum it afresh (a rare path). The
			// messages of a chunk over maxMessage go without one.
			msg.CRC32C, msg.HasCRC = crc32.Checksum(data[:n], castagnoli), true
		}
		if n == len(r.data) {
			msg.Data = &r.data
		} else if n > 0 {
			p := data[:n:n]
			msg.Data = &p
		}
		if msg.Data != nil {
			msg.hold()
			s.track(msg)
			s.w.trackMsg(msg)
		}
		s.armTimer()
		err := s.stream.SendMsg(&msg.WriteMsg)
		if msg.Data != nil {
			msg.sent()
		}
		if err != nil {
			return err
		}
		data, from = data[n:], from+int64(n)
		if last {
			return nil
		}
	}
}

// track remembers a message sent on the current stream, and forgets those of
// chunks the service has acknowledged: gRPC has written them, so it releases
// them on its own.
func (s *session) track(m *outMsg) {
	s.mu.Lock()
	persisted := s.persisted
	s.mu.Unlock()
	i := 0
	for ; i < len(s.sent) && (s.sent[i].done.Load() || s.sent[i].ref.end() <= persisted); i++ {
		s.sent[i] = nil
	}
	s.sent = append(s.sent[i:], m)
}

// sendFinish sends a finish_write message without data at offset.
func (s *session) sendFinish(offset int64) error {
	req := s.newRequest(offset)
	req.FinishWrite, req.ObjectChecksums = true, s.w.checksums()
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

// armTimer restarts the chunk timeout before a send.
func (s *session) armTimer() {
	if s.timer != nil {
		s.mu.Lock()
		s.timer.Reset(s.w.c.retry.ChunkTimeout)
		s.mu.Unlock()
	}
}

// recover resumes the session after cause broke the stream: backoff, ask the
// service how much it persisted, release that, open a new stream and resend the
// rest. It gives up on non-transient errors and after the retry budget.
func (s *session) recover(cause error) error {
	w := s.w
	bo := newBackoff(w.c.retry)
	for {
		if s.stream != nil && errors.Is(context.Cause(s.sctx), errChunkTimeout) && !errors.Is(cause, errChunkTimeout) {
			// gRPC reports our own cancellation as a plain Canceled.
			cause = fmt.Errorf("%w: %w", errChunkTimeout, cause)
		}
		if cause == io.EOF {
			// SendMsg reports a broken stream as io.EOF; the reason is the
			// stream's status, which the receiver gets.
			<-s.recvDone
			s.mu.Lock()
			cause = s.recvErr
			s.mu.Unlock()
		}
		s.teardown(cause)
		if !w.retryable(cause) {
			return newError("BidiWriteObject", w.bucket, w.object, cause)
		}
		if err := bo.wait(w.ctx); err != nil {
			return newError("BidiWriteObject", w.bucket, w.object, fmt.Errorf("%w (retrying after: %v)", err, cause))
		}
		var st wire.QueryWriteStatusResponse
		err := w.c.conn.Invoke(w.outgoing(w.ctx), wire.MethodQueryWriteStatus, &wire.QueryWriteStatusRequest{UploadId: s.uploadID}, &st, w.c.callOpts...)
		if err != nil {
			cause = err
			continue
		}
		// A call that completed after the old stream was torn down proves
		// gRPC's writer went past that stream's messages: what it did not
		// release by now, it never will.
		releaseOrphans(w.orphans)
		w.orphans = w.orphans[:0]
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
		if len(resend) > 0 && persisted < resend[0].off {
			return &Error{Op: "QueryWriteStatus", Bucket: w.bucket, Object: w.object, Code: codes.DataLoss,
				Err: fmt.Errorf("the service reports %d bytes persisted, below %d it had acknowledged", persisted, resend[0].off)}
		}
		if err := s.open(); err != nil {
			cause = err
			continue
		}
		for _, r := range resend {
			if err = s.send(r, max(persisted, r.off)); err != nil {
				break
			}
		}
		if err != nil {
			cause = err
			continue
		}
		if s.finishing {
			if len(resend) == 0 || !resend[len(resend)-1].final {
				// Everything is persisted but the service never saw
				// finish_write: finish with an empty message.
				err = s.sendFinish(persisted)
			}
			if err == nil {
				err = s.stream.CloseSend()
			}
			if err != nil {
				cause = err
				continue
			}
		}
		return nil
	}
}

// abort abandons the session: the stream is cancelled and never finalized.
func (s *session) abort(cause error) {
	s.teardown(cause)
}

// close ends the session's stream and drops the service's hold on every chunk
// still pending; gRPC lets go of its own when the stream is torn down.
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
