package uploader

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/objup/objup/uploader/internal/mode"
	"github.com/objup/objup/uploader/internal/xfer"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/chunker"
)

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
	m := mode.NewAppend(w.params())
	w.mode = m
	if err := m.Start(); err != nil {
		w.fail("TakeOver", err)
		w.closed = true
		w.end()
		return nil, 0, w.err
	}
	a := w.req.App
	a.Mu.Lock()
	persisted, crc, hasCRC := a.Persisted, a.CRC, a.HasCRC
	a.Mu.Unlock()
	m.StartAt(persisted)
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
	f, ok := w.mode.(mode.Flusher)
	if !ok {
		// An appendable object's mode flushes, whichever it is.
		panic("uploader: the mode of an appendable object does not flush")
	}
	n, err := f.Flush(ctx, c)
	if err != nil {
		var wait *mode.FlushWait
		if errors.As(err, &wait) {
			if ctx.Err() != nil && w.req.Ctx.Err() == nil {
				// Flush's own context ended the wait: the upload goes on.
				return n, errOf(&w.req.Target, "Flush", wait.Err)
			}
			err = wait.Err
		}
		w.fail("Flush", err)
		return 0, w.err
	}
	w.ev.Flushed(time.Since(start))
	if err := w.flushed(n); err != nil {
		w.fail("Flush", err)
		return n, w.err
	}
	return n, nil
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
