package uploader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync/atomic"

	"github.com/objup/objup/uploader/internal/mode"
	"github.com/objup/objup/uploader/internal/names"
	"github.com/objup/objup/uploader/internal/retry"
	"github.com/objup/objup/uploader/internal/telemetry"
	"github.com/objup/objup/uploader/internal/xfer"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/header"
	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/pool"
)

var (
	errClosed         = fmt.Errorf("writer is closed: %w", fs.ErrClosed)
	errNilReader      = errors.New("nil reader: write an empty object from an empty reader (for example bytes.NewReader(nil))")
	errAbandonedEmpty = errors.New("upload abandoned")
)

// Writer uploads one object. It implements io.WriteCloser and io.ReaderFrom.
//
// Data is cut into chunks of the chunk size (256 KiB by default). If Close
// comes while the first chunk still holds the whole object, the object goes
// out in ONE WriteObject call carrying the object's spec, data and checksums,
// and no goroutine is started (a first chunk over 2 MiB goes out as several
// messages of one WriteObject stream). Otherwise a resumable session streams
// the chunks, with a bounded number unacknowledged, and resumes after
// transient failures.
//
// The object becomes visible only when Close returns nil. An error, a cancelled
// context or CloseWithError never finalizes it: nothing partial is ever stored.
//
// A Writer is not safe for concurrent use: a method called while another
// runs panics, since the caller has a bug (cancel the upload's context to
// abort it from another goroutine). A Write or ReadFrom after Close returns
// the upload's error, or, after a successful Close, an error with code
// Canceled that matches fs.ErrClosed. Close (or CloseWithError) must be
// called to release its buffers.
type Writer struct {
	req   xfer.Request // what the transport reads: target, spec, checksums, chunk lifetimes
	c     *Client
	cfg   writerConfig
	ch    chunker.Chunker
	retry retry.Engine
	mode  mode.Streaming // how the chunks reach the service; nil until the first chunk is full (or Close), and for a one-shot upload
	ev    uploadEvents   // what the upload reports while it runs and when it ends

	busy     atomic.Bool // a method runs
	closed   bool
	recorded bool         // the upload's end was recorded
	err      error        // sticky; set once
	attrs    *ObjectAttrs // the stored object's attributes
}

// client returns the Writer's client.
func (w *Writer) client() *Client { return w.c }

// NewWriter returns a Writer for gs://bucket/object. It validates the names,
// the options, the header chain in ctx and ctx itself at once, and returns an
// error (code InvalidArgument) before anything is sent; no RPC is made until
// the first chunk fills or Close is called. ctx governs the whole upload:
// cancelling it aborts the upload, and header.Append / header.WithTenant
// values in it are sent with every RPC.
func (c *Client) NewWriter(ctx context.Context, bucket, object string, opts ...WriterOption) (*Writer, error) {
	w := new(Writer)
	if err := w.init(c, ctx, bucket, object, opts); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *Writer) init(c *Client, ctx context.Context, bucket, object string, opts []WriterOption) error {
	w.c = c
	w.req.Target = xfer.Target{Ctx: ctx, Bucket: bucket, Object: object}
	if ctx == nil {
		return invalid("NewWriter", bucket, object, "nil context")
	}
	if err := names.Bucket(bucket); err != nil {
		return invalid("NewWriter", bucket, object, "%w", err)
	}
	if err := names.Object(object); err != nil {
		return invalid("NewWriter", bucket, object, "%w", err)
	}
	if err := w.client().closedErr(); err != nil {
		return &Error{Op: "NewWriter", Bucket: bucket, Object: object, Code: codes.Canceled, Err: err}
	}
	w.cfg.retry = &w.client().retry
	w.cfg.chunkSize = w.client().chunkSize
	w.req.Scratch.Spec.Resource = &w.req.Scratch.Object
	w.cfg.spec, w.cfg.obj = &w.req.Scratch.Spec, &w.req.Scratch.Object
	for _, o := range opts {
		if o != nil {
			o.applyWriter(&w.cfg)
		}
	}
	if err := w.cfg.validate(opts, w.client().grpc()); err != nil {
		return invalid("NewWriter", bucket, object, "%w", err)
	}
	if err := w.useMultipart(); err != nil {
		return invalid("NewWriter", bucket, object, "%w", err)
	}
	w.startAppendable()
	if err := header.Validate(ctx); err != nil {
		return invalid("NewWriter", bucket, object, "header chain: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return newError("NewWriter", bucket, object, err)
	}
	alloc, err := w.allocator(ctx)
	if err != nil {
		return invalid("NewWriter", bucket, object, "%w", err)
	}
	w.req.Life.Alloc = alloc
	w.req.Scratch.NoCRC = w.cfg.knob.NoCRC32C
	w.ev = telemetry.NewEvents((*writerScope)(w), nil)
	w.req.Ctx = w.ev.StartSpan(ctx, bucket, object)
	w.req.Life.Ev = &w.ev
	w.retry.Init(&w.cfg.retry.Config, &w.ev)
	w.req.Params = "bucket=" + bucketPrefix + bucket
	return nil
}

// enter marks the start of a method. A method already running elsewhere
// is misuse, a bug in the caller: it panics (see Writer).
func (w *Writer) enter(op string) {
	if w.busy.Swap(true) {
		panic("uploader: Writer." + op + " called while another of its methods runs: a Writer is not safe for concurrent use (to abort an upload from another goroutine, cancel its context)")
	}
}

func (w *Writer) leave() { w.busy.Store(false) }

// Write copies p into the Writer's chunks. It returns an error if the upload
// has failed (the error stays; nothing will be stored).
func (w *Writer) Write(p []byte) (int, error) {
	w.enter("Write")
	defer w.leave()
	return w.write(p)
}

func (w *Writer) write(p []byte) (int, error) {
	if err := w.usable("Write"); err != nil {
		return 0, err
	}
	n := 0
	for len(p) > 0 {
		if w.ch.NeedsBuffer() || w.ch.Full() {
			if err := w.room(); err != nil {
				w.fail("Write", err)
				return n, w.err
			}
		}
		k := w.ch.Write(p)
		n += k
		p = p[k:]
	}
	return n, nil
}

// ReadFrom reads r until io.EOF straight into the Writer's chunks, with no
// staging buffer (io.Copy uses it); if r implements io.WriterTo, r writes
// into the Writer instead. The returned error is r's error, or the upload's;
// either fails the upload. A nil r is an error.
func (w *Writer) ReadFrom(r io.Reader) (int64, error) {
	w.enter("ReadFrom")
	defer w.leave()
	if err := w.usable("ReadFrom"); err != nil {
		return 0, err
	}
	if r == nil {
		w.fail("ReadFrom", invalid("ReadFrom", w.req.Bucket, w.req.Object, "%w", errNilReader))
		return 0, w.err
	}
	if wt, ok := r.(io.WriterTo); ok {
		n, err := wt.WriteTo(writeOnly{w})
		if err != nil {
			w.fail("ReadFrom", err)
			return n, w.err
		}
		return n, nil
	}
	var total int64
	for {
		if w.ch.NeedsBuffer() {
			if err := w.room(); err != nil {
				w.fail("ReadFrom", err)
				return total, w.err
			}
		}
		k, err := w.ch.Fill(r)
		total += int64(k)
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			w.fail("ReadFrom", err)
			return total, w.err
		}
	}
}

// writeOnly is the Writer as a plain io.Writer for io.WriterTo, inside
// ReadFrom (which already holds the Writer).
type writeOnly struct{ w *Writer }

func (o writeOnly) Write(p []byte) (int, error) { return o.w.write(p) }

// usable reports the error that ends every method once the upload failed or
// closed, or once ctx ended.
func (w *Writer) usable(op string) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return &Error{Op: op, Bucket: w.req.Bucket, Object: w.req.Object, Code: codes.Canceled, Err: errClosed}
	}
	if err := w.req.Ctx.Err(); err != nil {
		w.fail(op, err)
		return w.err
	}
	return nil
}

// room makes space for more bytes, the one step of the upload loop: a full
// chunk goes to the upload's mode (chosen with the first), and an empty
// buffer is attached.
func (w *Writer) room() error {
	if w.ch.Full() {
		if w.ch.ChunkSize() < pool.Quantum {
			return &Error{Op: "Write", Bucket: w.req.Bucket, Object: w.req.Object, Code: codes.InvalidArgument,
				Err: fmt.Errorf("object outgrows the %d-byte WithBuffer buffer: a buffer under %d bytes (256 KiB) only serves objects that fit in it", w.ch.ChunkSize(), pool.Quantum)}
		}
		c := w.ch.Seal()
		if w.mode == nil {
			w.mode = w.choose(c)
		}
		if err := w.mode.Push(c); err != nil {
			return err
		}
		if c := w.cfg.cps.Load(); c != nil {
			if err := c.write(false); err != nil {
				return err
			}
		}
	}
	b, err := w.buffer()
	if err != nil {
		return err
	}
	w.ch.Attach(b)
	return nil
}

// fail records the first error and abandons the upload.
func (w *Writer) fail(op string, err error) {
	if w.err == nil {
		w.err = errOf(&w.req.Target, op, err)
	}
	if w.mode != nil {
		w.mode.Abort(w.err)
		var e *Error
		if u, ok := w.mode.(interface{ Unsettled() bool }); ok && u.Unsettled() && errors.As(w.err, &e) && e.Code != codes.InvalidArgument {
			// A session an earlier Writer began may have been finished
			// by that Writer's last message: the service tells, when
			// the handle is resumed again.
			e.unknown = true
		}
	}
}

// Close finishes the upload: it sends what is left with the object's checksums
// and waits for the service to store the object, whose attributes Attrs then
// returns. Close releases every buffer the Writer held before it returns,
// whatever the outcome, with one exception: once the upload's context
// ended, buffers of the client's pool that gRPC still holds (a torn-down
// stream's messages) go back in the background, so that Close returns by
// about a second after it; Client.Close waits for them. A WithBuffer buffer is always
// released before Close returns. Closing twice returns the first result.
func (w *Writer) Close() error {
	w.enter("Close")
	defer w.leave()
	if w.closed {
		return w.err
	}
	defer w.end()
	if err := w.usable("Close"); err != nil {
		w.closed = true
		return err
	}
	w.closed = true
	if w.ch.NeedsBuffer() && w.ch.Holding() {
		// A byte read past a full chunk waits for a buffer.
		if err := w.room(); err != nil {
			w.fail("Close", err)
			return w.err
		}
	}
	last, _ := w.ch.Finish()
	if err := w.sentCRCMismatch(); err != nil {
		w.req.Life.PutBuffer(last.Buf)
		w.fail("Close", err)
		return w.err
	}
	if w.mode == nil {
		// The whole object is in its first chunk.
		w.mode = w.single(last)
	}
	w.finalize()
	var o *wire.Object
	var err error
	if w.mode != nil {
		o, err = w.mode.Finish(last)
	} else {
		o, err = w.oneShot(last).Finish(last)
	}
	if err == nil {
		err = w.finished(o, w.ch.Size())
	}
	if err != nil {
		w.fail("Close", err)
		return w.err
	}
	return nil
}

// CloseWithError abandons the upload: nothing is stored, the buffers are
// released, and later calls return an error wrapping err. It returns nil, or
// the error of an upload that had already failed.
func (w *Writer) CloseWithError(err error) error {
	w.enter("CloseWithError")
	defer w.leave()
	if w.closed {
		return w.err
	}
	prior := w.err
	if err == nil {
		err = errAbandonedEmpty
	}
	w.fail("CloseWithError", &Error{Op: "CloseWithError", Bucket: w.req.Bucket, Object: w.req.Object, Code: codes.Canceled, Err: err})
	w.closed = true
	w.end()
	return prior
}

// Attrs returns the stored object's attributes after Close returned nil, and nil
// before that or after a failure.
func (w *Writer) Attrs() *ObjectAttrs { return w.attrs }

// end releases the upload's buffers and records its end.
func (w *Writer) end() {
	w.release()
	if c := w.cfg.cps.Load(); c != nil {
		c.end(w.err)
	}
	if !w.recorded {
		w.recorded = true
		path := mode.PathOneShot
		if w.mode != nil {
			path = w.mode.Path()
		}
		w.ev.Ended(w.ch.Size(), path, w.err)
	}
}
