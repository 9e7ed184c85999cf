package uploader

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/objup/objup/uploader/internal/retry"
	"github.com/objup/objup/uploader/internal/xfer"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/internal/wire"
)

// pathAppendable is the "path" attribute of an appendable upload.
const pathAppendable = "appendable"

// WithAppendable makes the Writer write an appendable object, the only
// kind a zonal (Rapid) bucket takes: the object exists on the service from
// the first Flush or the first full chunk on, grows with each Flush
// (durable and readable at once), can be taken over by another writer
// (Client.TakeOver) and is finalized by Close. It needs the gRPC transport,
// and excludes WithParallelUpload; NewWriter reports either as an
// InvalidArgument error.
//
// An appendable Writer streams its data on one BidiWriteObject stream,
// sending each full chunk as it fills and keeping every byte until the
// service reports it persisted: after a broken stream, a redirect or a
// lost connection it opens a new stream on the object (with the write
// handle and routing token the service gave) and sends again what the
// service lacks. Close sends the rest and finalizes the object with the
// CRC32C of all of it (see WithoutFinalize). An upload that fails or is
// abandoned (CloseWithError) leaves the object unfinalized with what was
// persisted, as GCS keeps it; a later Client.TakeOver can go on or finalize
// it.
//
// A Writer with nothing unflushed holds no chunk buffer, and no goroutine
// beyond its stream's receiver.
func WithAppendable() WriterOption {
	return writerOptionFunc(func(c *writerConfig) { c.appending = true })
}

// WithoutFinalize makes Close of an appendable Writer (WithAppendable,
// Client.TakeOver) flush what is left and leave the object unfinalized, so
// that a later writer can take it over; Attrs then reports the object as
// persisted. Without WithAppendable it is an InvalidArgument error.
func WithoutFinalize() WriterOption {
	return writerOptionFunc(func(c *writerConfig) { c.keepOpen = true })
}

// checkAppendable checks the options of an appendable Writer on a client
// that uploads over gRPC or not.
func (cfg *writerConfig) checkAppendable(grpc bool) error {
	switch {
	case !cfg.appending:
		return nil
	case !grpc:
		return errors.New("appendable objects are written over gRPC only, not the JSON API (WithHTTP)")
	case cfg.parallel != nil:
		return errors.New("WithAppendable and WithParallelUpload exclude each other")
	case cfg.knob.MD5 || cfg.sendMD5 != nil:
		// The service keeps no MD5 of an appendable object and refuses a
		// finish that carries one.
		return errors.New("an appendable object has no MD5: WithMD5 and WithSendMD5 exclude WithAppendable")
	}
	return nil
}

// startAppendable sets up the state of an appendable Writer.
func (w *Writer) startAppendable() {
	if !w.cfg.appending {
		return
	}
	yes := true
	w.req.Scratch.Spec.Appendable = &yes
	w.req.App = &xfer.Appendable{Unfinalized: w.cfg.keepOpen}
}

// grpc reports whether the client uploads over gRPC.
func (c *Client) grpc() bool { return !c.overHTTP }

// TakeOver opens a Writer that appends to generation gen of the
// unfinalized appendable object gs://bucket/object, as GCS lets a second
// writer take an appendable object over: the service fences the writer
// before it, whose next call fails. TakeOver opens the object's stream at
// once and returns the Writer and the object's persisted size, where the
// bytes written next go. The Writer is appendable (WithAppendable is
// implied); its Close finalizes the object, with the CRC32C of the whole
// object (the service's checksum of the persisted bytes combined with the
// new ones), unless WithoutFinalize.
//
// Only options a takeover can honour are accepted: attributes
// (WithAttrs), preconditions, experimental.WithMD5, WithSendMD5 and WithParallelUpload
// are InvalidArgument errors, since the object exists.
func (c *Client) TakeOver(ctx context.Context, bucket, object string, gen int64, opts ...WriterOption) (*Writer, int64, error) {
	w := new(Writer)
	// A takeover's Writer is appendable: the options are checked as such
	// (WithoutFinalize among them).
	opts = append([]WriterOption{WithAppendable()}, opts...)
	if err := w.init(c, ctx, bucket, object, opts); err != nil {
		return nil, 0, err
	}
	if err := w.takeoverOptions(gen); err != nil {
		w.end()
		return nil, 0, invalid("TakeOver", bucket, object, "%w", err)
	}
	w.req.App.Takeover, w.req.App.Gen = true, gen
	m := &appendMode{session{w: w}}
	w.mode = m
	if err := m.start(); err != nil {
		w.fail("TakeOver", err)
		w.closed = true
		w.end()
		return nil, 0, w.err
	}
	a := w.req.App
	a.Mu.Lock()
	persisted, crc, hasCRC := a.Persisted, a.CRC, a.HasCRC
	a.Mu.Unlock()
	m.s.startAt(persisted)
	var chOpts []chunker.Option
	chOpts = append(chOpts, chunker.Continuing(persisted, crc))
	if !hasCRC {
		// No checksum of the persisted bytes: the whole object's
		// CRC32C is unknown, and the finish goes without it.
		w.cfg.knob.NoCRC32C = true
	}
	if err := w.ch.Reset(w.ch.ChunkSize(), chOpts...); err != nil {
		panic(err) // the size was accepted by init
	}
	w.ev.TookOver()
	return w, persisted, nil
}

// takeoverOptions refuses the options a takeover cannot honour.
func (w *Writer) takeoverOptions(gen int64) error {
	cfg := &w.cfg
	s := &w.req.Scratch.Spec
	o := s.Resource
	switch {
	case gen <= 0:
		return fmt.Errorf("generation %d: a takeover names the object's generation", gen)
	case cfg.knob.MD5 || cfg.sendMD5 != nil:
		return errors.New("an MD5 of the whole object cannot be computed after a takeover")
	case s.IfGenerationMatch != nil || s.IfGenerationNotMatch != nil || s.IfMetagenerationMatch != nil || s.IfMetagenerationNotMatch != nil:
		return errors.New("a takeover takes no preconditions: the generation names the object")
	case cfg.parallel != nil:
		return errors.New("a takeover cannot be a parallel upload")
	case o.ContentType != "" || o.ContentEncoding != "" || o.ContentDisposition != "" || o.ContentLanguage != "" ||
		o.CacheControl != "" || o.StorageClass != "" || len(o.Metadata) > 0 || o.CustomTime != nil || o.KmsKey != "" ||
		len(o.Acl) > 0 || s.PredefinedAcl != "" || o.Retention != nil || o.TemporaryHold || o.EventBasedHold != nil || len(o.Contexts.GetCustom()) > 0:
		return errors.New("a takeover cannot set the object's attributes: they were set when it was created")
	}
	return nil
}

// Flush sends what the Writer holds of an appendable object (WithAppendable,
// Client.TakeOver) with a flush and a state lookup, waits until the service
// has persisted it, and returns the service's persisted size: the bytes up
// to there are durable and readable. The first Flush creates the object if
// no chunk did. ctx bounds the wait for the service's answer: when it
// ends, Flush returns its error and the upload goes on (the bytes are sent
// and kept until persisted). A stream that broke is opened again within
// the Flush as the upload's context and retry settings allow, not ctx. A failure of the upload itself fails the Writer, as a Write
// would. Flush on a Writer that is not appendable is an InvalidArgument
// error that leaves the Writer as it was; after Close it returns what
// Write would.
func (w *Writer) Flush(ctx context.Context) (int64, error) {
	w.enter("Flush")
	defer w.leave()
	switch {
	case w.req.App == nil:
		return 0, invalid("Flush", w.req.Bucket, w.req.Object, "Flush needs an appendable object (WithAppendable or Client.TakeOver)")
	case ctx == nil:
		return 0, invalid("Flush", w.req.Bucket, w.req.Object, "nil context")
	}
	if err := w.usable("Flush"); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, errOf(&w.req.Target, "Flush", err)
	}
	start := time.Now()
	if w.ch.NeedsBuffer() && w.ch.Holding() {
		// A byte read past a full chunk waits for a buffer.
		if err := w.room(); err != nil {
			w.fail("Flush", err)
			return 0, w.err
		}
	}
	var c chunker.Chunk
	if w.ch.Holding() {
		c = w.ch.Seal()
	}
	if w.mode == nil {
		w.mode = w.choose(c)
	}
	n, err := w.mode.flush(ctx, c)
	if err != nil {
		var wait *flushWait
		if errors.As(err, &wait) {
			if ctx.Err() != nil && w.req.Ctx.Err() == nil {
				// Flush's own context ended the wait: the upload goes on.
				return n, errOf(&w.req.Target, "Flush", wait.err)
			}
			err = wait.err
		}
		w.fail("Flush", err)
		return 0, w.err
	}
	w.ev.Flushed(time.Since(start))
	return n, nil
}

// appendMode is the mode of an appendable object (WithAppendable,
// Client.TakeOver): a session on the object's BidiWriteObject stream that
// flushes, and whose finish finalizes the object or leaves it open.
type appendMode struct{ session }

// flush hands c over and waits, as ctx allows, until the service has
// persisted everything written; it returns the persisted size.
func (m *appendMode) flush(ctx context.Context, c chunker.Chunk) (int64, error) {
	w := m.w
	if err := m.start(); err != nil {
		w.req.Life.PutBuffer(c.Buf)
		return 0, err
	}
	s := m.s
	if len(c.Data) == 0 {
		// Nothing new: the buffer goes back, and the flush asks only
		// what is persisted.
		w.req.Life.PutBuffer(c.Buf)
	} else {
		s.take(w.req.Life.NewRef(smallFlush(w, c)))
	}
	if err := s.send(true); err != nil {
		return 0, err
	}
	last := s.lastNow()
	if err := s.waitIn(ctx, func() bool { return s.persisted >= last }); err != nil {
		return s.persistedNow(), &flushWait{err}
	}
	return s.persistedNow(), nil
}

// flushWait is the failure of a flush's wait for the service.
type flushWait struct{ err error }

func (e *flushWait) Error() string { return e.err.Error() }
func (e *flushWait) Unwrap() error { return e.err }

func (m *appendMode) close() {
	m.session.close()
	m.w.req.App.DropReady()
}

func (*appendMode) path() string { return pathAppendable }

// flushCopy is the most a Flush copies out of its chunk buffer.
const flushCopy = 32 << 10

// smallFlush returns c, or, when it holds a few bytes (up to flushCopy) of
// a Flush, a copy of them in memory of their size, giving c's chunk buffer
// back at once: a writer that appends and flushes small records then holds
// a chunk buffer only between a Write and its Flush, not for the round
// trip to the service, and the pool's buffers are not churned.
func smallFlush(w *Writer, c chunker.Chunk) chunker.Chunk {
	if c.Buf == nil || len(c.Data) > flushCopy {
		return c
	}
	small := make([]byte, len(c.Data))
	copy(small, c.Data)
	w.req.Life.PutBuffer(c.Buf)
	c.Buf, c.Data = nil, small
	return c
}

// single returns the mode of an object whose whole content is its last
// chunk, at Close: one write (for an appendable object, a stream that
// creates and finalizes it in one round trip; see writeAppendable), or
// the appendable session when the object is to stay unfinalized.
func (w *Writer) single(last chunker.Chunk) mode {
	if a := w.req.App; a != nil && (a.Unfinalized || a.Takeover) {
		return w.choose(last)
	}
	if w.cfg.resumable {
		w.spec(last.Data, int64(len(last.Data)))
		return &session{w: w}
	}
	return oneShot{w}
}

// finish ends an appendable object's upload at Close: the rest goes out
// and the object is finalized with its checksums, or, with
// WithoutFinalize, flushed and left open.
func (m *appendMode) finish(last chunker.Chunk) (*wire.Object, error) {
	w := m.w
	r := w.req.Life.NewRef(last)
	if err := w.sentCRCMismatch(); err != nil {
		r.Unref()
		return nil, err
	}
	if err := m.start(); err != nil {
		r.Unref()
		return nil, err
	}
	s := m.s
	if !w.req.App.Unfinalized {
		w.req.Scratch.HasSums = w.checksums() != nil
		o, err := s.finish(r)
		if err != nil && retry.AnswerLost(err) {
			// The finish may have finalized the object: its generation,
			// the object's identity, is looked up.
			err = s.teardown(err)
			w.req.App.Mu.Lock()
			gen := w.req.App.Gen
			w.req.App.Mu.Unlock()
			o, err = w.finalizedAt(w.client().tr, gen, err)
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
	a := w.req.App
	a.Mu.Lock()
	defer a.Mu.Unlock()
	o := &wire.Object{Name: w.req.Object, Bucket: w.req.Resource(), Generation: a.Gen}
	if a.Object != nil {
		o = proto.Clone(a.Object).(*wire.Object)
	}
	o.Size, o.Checksums = end, nil
	return o, nil
}

// sentCRCMismatch checks an appendable object's whole-object CRC32C from
// WithSendCRC32C against the bytes written, before the finish goes out:
// the service verifies it only when it finalizes, and by then it has
// persisted the bytes (an appendable object's bytes are durable once
// flushed), so a mismatch is a DataLoss error found here, and the object,
// if a flush created it, stays unfinalized.
func (w *Writer) sentCRCMismatch() error {
	cfg := &w.cfg
	if w.req.App == nil || !cfg.hasCRC || cfg.knob.NoCRC32C || w.ch.CRC32C() == cfg.sendCRC {
		return nil
	}
	return &Error{Op: "Close", Bucket: w.req.Bucket, Object: w.req.Object, Code: codes.DataLoss,
		Err: fmt.Errorf("WithSendCRC32C says %08x, the bytes written have %08x: the object is not finalized", cfg.sendCRC, w.ch.CRC32C())}
}
