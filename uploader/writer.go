package uploader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/header"
	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/pool"
)

const (
	// maxMessage is the service's limit for the data of one write message.
	maxMessage = 2 << 20
	// requestParamsKey routes every RPC to the bucket.
	requestParamsKey = "x-goog-request-params"
	invalidCode      = codes.InvalidArgument
)

var errClosed = errors.New("writer is closed")

// Writer uploads one object. It implements io.WriteCloser and io.ReaderFrom.
//
// Data is cut into chunks of the client's chunk size (256 KiB by default). If
// Close comes while the first chunk still holds the whole object, the object goes
// out in ONE WriteObject call carrying the object's spec, data and checksums, and
// no goroutine is started. Otherwise a resumable session streams the chunks,
// with up to the client's chunks-in-flight unacknowledged, and resumes after
// transient failures.
//
// The object becomes visible only when Close returns nil. An error, a cancelled
// context or CloseWithError never finalizes it: nothing partial is ever stored.
//
// A Writer is not safe for concurrent use; its methods must be called from one
// goroutine at a time. Close (or CloseWithError) must be called to release its
// buffers.
type Writer struct {
	c         *Client
	ctx       context.Context
	bucket    string
	object    string
	reqParams string // "bucket=projects/_/buckets/NAME"; [7:] is the resource name
	cfg       writerConfig
	alloc     pool.Allocator
	ch        *chunker.Chunker
	sess      *session

	err    error // sticky; set once
	closed bool
	attrs  *ObjectAttrs

	getter  getter         // the chunker's allocator
	bufs    sync.WaitGroup // chunk buffers not yet given back
	first   chunkRef       // the one-shot chunk, kept here to spare an allocation
	orphans []*outMsg      // messages of failed calls gRPC may never release
	msgs    []*outMsg      // every message with data not known to be released
}

// trackMsg remembers a message with data until gRPC releases it, so release
// can free what gRPC never will. Released messages are dropped as the list
// grows, which keeps it about as long as the chunks in flight.
func (w *Writer) trackMsg(m *outMsg) {
	if len(w.msgs) >= 32 && len(w.msgs) == cap(w.msgs) {
		kept := w.msgs[:0]
		for _, x := range w.msgs {
			if !x.done.Load() {
				kept = append(kept, x)
			}
		}
		clear(w.msgs[len(kept):])
		w.msgs = kept
	}
	w.msgs = append(w.msgs, m)
}

// orphan notes a message of a failed call or torn-down stream; release frees
// it by force if gRPC has not after orphanGrace.
func (w *Writer) orphan(m *outMsg) {
	if !m.done.Load() {
		w.orphans = append(w.orphans, m)
	}
}

// releaseOrphans drops gRPC's references that a failed call left behind.
func releaseOrphans(ms []*outMsg) {
	for _, m := range ms {
		m.release()
	}
}

// NewWriter returns a Writer for gs://bucket/object. It validates the names,
// the options and ctx at once and returns an error (see IsInvalidArgument)
// before anything is sent; no RPC is made until the first chunk fills or Close is
// called. ctx governs the whole upload: cancelling it aborts the upload, and
// header.Append / header.WithTenant values in it are sent with every RPC.
func (c *Client) NewWriter(ctx context.Context, bucket, object string, opts ...WriterOption) (*Writer, error) {
	w := &Writer{c: c, ctx: ctx, bucket: bucket, object: object}
	if err := w.init(opts); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *Writer) init(opts []WriterOption) error {
	if w.ctx == nil {
		return invalid("NewWriter", w.bucket, w.object, "nil context")
	}
	if err := validateBucket(w.bucket); err != nil {
		return invalid("NewWriter", w.bucket, w.object, "%w", err)
	}
	if err := validateObject(w.object); err != nil {
		return invalid("NewWriter", w.bucket, w.object, "%w", err)
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o.applyWriter(&w.cfg); err != nil {
			return invalid("NewWriter", w.bucket, w.object, "%w", err)
		}
	}
	if err := w.ctx.Err(); err != nil {
		return newError("NewWriter", w.bucket, w.object, err)
	}
	w.alloc = w.c.alloc
	if w.cfg.hasBuffer {
		f, err := pool.NewFixed(w.cfg.buffer)
		if err != nil {
			return invalid("NewWriter", w.bucket, w.object, "WithBuffer: %w", err)
		}
		w.alloc = f
	}
	var chOpts []chunker.Option
	if w.cfg.md5 {
		chOpts = append(chOpts, chunker.WithMD5())
	}
	w.getter.w = w
	ch, err := chunker.New(w.ctx, &w.getter, w.emit, chOpts...)
	if err != nil {
		return invalid("NewWriter", w.bucket, w.object, "%w", err)
	}
	w.ch = ch
	w.reqParams = "bucket=" + bucketPrefix + w.bucket
	return nil
}

// Write copies p into the Writer's chunks. It returns an error if the upload
// has failed (the error stays; nothing will be stored).
func (w *Writer) Write(p []byte) (int, error) {
	if err := w.check("Write"); err != nil {
		return 0, err
	}
	n, err := w.ch.Write(p)
	if err != nil {
		w.fail("Write", err)
		return n, w.err
	}
	return n, nil
}

// ReadFrom reads r until io.EOF straight into the Writer's chunks, with no
// staging buffer (io.Copy uses it). The returned error is r's error, or the
// upload's.
func (w *Writer) ReadFrom(r io.Reader) (int64, error) {
	if err := w.check("ReadFrom"); err != nil {
		return 0, err
	}
	n, err := w.ch.ReadFrom(r)
	if err != nil {
		w.fail("ReadFrom", err)
		return n, w.err
	}
	return n, nil
}

func (w *Writer) check(op string) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return &Error{Op: op, Bucket: w.bucket, Object: w.object, Code: codes.FailedPrecondition, Err: errClosed}
	}
	if err := w.ctx.Err(); err != nil {
		w.fail(op, err)
		return w.err
	}
	return nil
}

// fail records the first error and abandons the upload.
func (w *Writer) fail(op string, err error) {
	if w.err == nil {
		w.err = newError(op, w.bucket, w.object, err)
	}
	if w.sess != nil {
		w.sess.abort(w.err)
	}
}

// Close finishes the upload: it sends what is left with the object's checksums
// and waits for the service to store the object, whose attributes Attrs then
// returns. Close releases every buffer the Writer held before it returns,
// whatever the outcome. Closing twice returns the first result.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	defer w.release()
	if w.err != nil {
		return w.err
	}
	last, oneShot, err := w.ch.Finish()
	if err != nil {
		w.fail("Close", err)
		return w.err
	}
	if err := w.ctx.Err(); err != nil {
		w.putChunk(last)
		w.fail("Close", err)
		return w.err
	}
	if oneShot {
		err = w.oneShot(last)
	} else {
		err = w.sess.finish(w.newRef(last))
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
	if w.closed {
		return w.err
	}
	prior := w.err
	if err == nil {
		err = errors.New("upload abandoned")
	}
	w.fail("CloseWithError", &Error{Op: "CloseWithError", Bucket: w.bucket, Object: w.object, Code: codes.Canceled, Err: err})
	w.closed = true
	w.release()
	return prior
}

// Attrs returns the stored object's attributes after Close returned nil, and nil
// before that or after a failure.
func (w *Writer) Attrs() *ObjectAttrs { return w.attrs }

// release gives back every buffer: the chunker's, and the chunks in flight once
// gRPC has let go of them.
func (w *Writer) release() {
	if w.ch != nil {
		w.ch.Abort()
	}
	if w.sess != nil {
		w.sess.close()
	}
	// The upload is over and its streams are torn down: whatever gRPC has
	// not released within orphanGrace, it never will (see outMsg).
	held := w.orphans[:0]
	for _, m := range append(w.orphans, w.msgs...) {
		if !m.done.Load() {
			held = append(held, m)
		}
	}
	w.orphans, w.msgs = nil, nil
	if len(held) > 0 {
		t := time.AfterFunc(orphanGrace, func() { releaseOrphans(held) })
		defer t.Stop()
	}
	w.bufs.Wait()
}

func (w *Writer) putChunk(c chunker.Chunk) {
	if c.Buf != nil {
		_ = w.alloc.Put(c.Buf)
	}
}

// getter is the allocator the chunker draws from: the Writer's, except that
// a wait for a buffer (under a pool budget, or for a WithBuffer slot) gives way
// when the upload's stream fails. The chunks the stream held are released only
// once the session resumes and the service acknowledges them, so a writer
// waiting for a buffer while its own stream is broken would wait for itself; it
// resumes the session first and then waits again.
type getter struct{ w *Writer }

func (g *getter) BufferSize() int     { return g.w.alloc.BufferSize() }
func (g *getter) Put(b *[]byte) error { return g.w.alloc.Put(b) }
func (g *getter) Get(ctx context.Context) (*[]byte, error) {
	for {
		s := g.w.sess
		if s == nil || s.getCtx == nil {
			return g.w.alloc.Get(ctx)
		}
		b, err := g.w.alloc.Get(s.getCtx)
		if err == nil || ctx.Err() != nil {
			return b, err
		}
		s.mu.Lock()
		rerr := s.recvErr
		s.mu.Unlock()
		if rerr == nil {
			return nil, err
		}
		if err := s.recover(rerr); err != nil {
			return nil, err
		}
	}
}

// emit receives each full chunk from the chunker, on the caller's goroutine.
func (w *Writer) emit(c chunker.Chunk) error {
	if w.alloc.BufferSize() < pool.Quantum {
		w.putChunk(c)
		return &Error{Op: "Write", Bucket: w.bucket, Object: w.object, Code: codes.InvalidArgument,
			Err: fmt.Errorf("object outgrows the %d-byte WithBuffer buffer: a buffer under %d bytes (256 KiB) only serves objects that fit in it", w.alloc.BufferSize(), pool.Quantum)}
	}
	ref := w.newRef(c)
	if w.sess == nil {
		s, err := w.startSession(c.Data)
		if err != nil {
			ref.unref()
			return err
		}
		w.sess = s
	}
	return w.sess.push(ref)
}

// chunkRef is a chunk in flight. Its buffer goes back to the allocator when the
// last reference drops: one held until the service has persisted the chunk, and
// one per message gRPC still holds (see outMsg).
type chunkRef struct {
	w     *Writer
	buf   *[]byte
	data  []byte
	off   int64
	crc   uint32
	final bool
	refs  atomic.Int32
}

func (w *Writer) newRef(c chunker.Chunk) *chunkRef {
	r := &w.first
	if r.w != nil {
		r = new(chunkRef)
	}
	r.w, r.buf, r.data, r.off, r.crc = w, c.Buf, c.Data, c.Offset, c.CRC32C
	r.refs.Store(1)
	w.bufs.Add(1)
	return r
}

func (r *chunkRef) end() int64 { return r.off + int64(len(r.data)) }

// outMsg is one write message whose payload is a chunk's memory. It is the
// mem.BufferPool that gRPC calls once it no longer reads the payload; that drops
// the message's reference on the chunk, once.
//
// grpc-go (v1.85) never frees a data frame that reaches its writer after the
// stream was cleaned up, so a message sent while the stream was being torn down
// may never be released. Such a message is released by force once gRPC can no
// longer read it: after a later RPC on the connection completed (the writer
// processes its queue in order), or after orphanGrace.
type outMsg struct {
	wire.WriteMsg
	ref  *chunkRef
	done atomic.Bool
}

// orphanGrace bounds the wait for gRPC to release the messages of a stream
// that was torn down, when no later RPC proves it has let go of them.
const orphanGrace = time.Second

func newOutMsg(r *chunkRef) *outMsg {
	m := &outMsg{ref: r}
	m.Release = m
	return m
}

// hold takes the message's reference on its chunk before it is sent.
func (m *outMsg) hold() { m.ref.refs.Add(1) }

// release drops the message's reference; only the first call counts.
func (m *outMsg) release() {
	if m.done.CompareAndSwap(false, true) {
		m.ref.unref()
	}
}

// Get is never called: the payload buffers are ours.
func (m *outMsg) Get(int) *[]byte { return nil }

// Put is called by gRPC once it no longer reads the payload.
func (m *outMsg) Put(*[]byte) { m.release() }

// sent reports the outcome of SendMsg: a message the codec never took is
// released at once.
func (m *outMsg) sent() {
	if !m.Marshaled() {
		m.release()
	}
}

func (r *chunkRef) unref() {
	if r.refs.Add(-1) == 0 {
		if r.buf != nil {
			_ = r.w.alloc.Put(r.buf)
		}
		r.w.bufs.Done()
	}
}

// outgoing builds the RPC's context: the header chain and the routing header.
func (w *Writer) outgoing(ctx context.Context) context.Context {
	return header.OutgoingContext(ctx, requestParamsKey, w.reqParams)
}

// spec builds the object's WriteObjectSpec. first is the start of the data, for
// content sniffing; size is the object's size, or -1 if unknown.
func (w *Writer) spec(first []byte, size int64) *wire.WriteObjectSpec {
	ct := w.cfg.contentType
	if ct == "" {
		if len(first) > 512 {
			first = first[:512]
		}
		ct = http.DetectContentType(first)
	}
	s := &wire.WriteObjectSpec{
		Resource: &wire.Object{
			Name:               w.object,
			Bucket:             w.reqParams[len("bucket="):],
			ContentType:        ct,
			ContentEncoding:    w.cfg.contentEncoding,
			ContentDisposition: w.cfg.contentDisposition,
			ContentLanguage:    w.cfg.contentLanguage,
			CacheControl:       w.cfg.cacheControl,
			StorageClass:       w.cfg.storageClass,
			Metadata:           w.cfg.metadata,
		},
		IfGenerationMatch:     w.cfg.ifGenerationMatch,
		IfMetagenerationMatch: w.cfg.ifMetagenMatch,
	}
	if size >= 0 {
		s.ObjectSize = proto.Int64(size)
	}
	return s
}

// checksums returns the whole-object checksums to send at finish_write.
func (w *Writer) checksums() *wire.ObjectChecksums {
	if w.cfg.noCRC32C && !w.cfg.md5 {
		return nil
	}
	cs := &wire.ObjectChecksums{}
	if !w.cfg.noCRC32C {
		cs.Crc32C = proto.Uint32(w.ch.CRC32C())
	}
	if w.cfg.md5 {
		cs.Md5Hash = w.ch.MD5()
	}
	return cs
}

// idempotent reports whether a one-shot upload may be retried as a whole.
func (w *Writer) idempotent() bool {
	switch w.c.retry.Idempotency {
	case RetryAlways:
		return true
	case RetryNever:
		return false
	}
	return w.cfg.ifGenerationMatch != nil
}

// oneShot sends the whole object in one WriteObject call. The call goes out
// as a unary call (one request message, one response): on the wire it is a
// client stream of one message, and gRPC starts no goroutine for it.
func (w *Writer) oneShot(last chunker.Chunk) error {
	ref := w.newRef(last)
	defer ref.unref()
	req := &wire.WriteObjectRequest{
		FirstMessage:    &wire.WriteObjectRequest_WriteObjectSpec{WriteObjectSpec: w.spec(ref.data, int64(len(ref.data)))},
		FinishWrite:     true,
		ObjectChecksums: w.checksums(),
	}
	var resp wire.WriteObjectResponse
	bo := newBackoff(w.c.retry)
	for {
		msg := newOutMsg(ref)
		msg.Req, msg.CRC32C, msg.HasCRC = req, ref.crc, !w.cfg.noCRC32C
		if ref.buf != nil {
			msg.Data = &ref.data
			msg.hold()
			w.trackMsg(msg)
		}
		err := w.c.conn.Invoke(w.outgoing(w.ctx), wire.MethodWriteObject, &msg.WriteMsg, &resp, w.c.callOpts...)
		if msg.Data != nil {
			msg.sent()
			if err != nil {
				// The call failed, maybe before gRPC wrote the payload:
				// see outMsg.
				w.orphan(msg)
			}
		}
		if err == nil {
			break
		}
		if !w.idempotent() || !w.retryable(err) {
			return newError("WriteObject", w.bucket, w.object, err)
		}
		if berr := bo.wait(w.ctx); berr != nil {
			return newError("WriteObject", w.bucket, w.object, fmt.Errorf("%w (retrying after: %v)", berr, err))
		}
	}
	return w.finished(resp.GetResource(), int64(len(ref.data)))
}

// finished checks the service's object against what was sent.
func (w *Writer) finished(o *wire.Object, size int64) error {
	if o == nil {
		return &Error{Op: "Close", Bucket: w.bucket, Object: w.object, Code: codes.Internal, Err: errors.New("the service finished the upload without returning the object")}
	}
	if o.GetSize() != size {
		return &Error{Op: "Close", Bucket: w.bucket, Object: w.object, Code: codes.DataLoss,
			Err: fmt.Errorf("the service stored %d bytes, %d were written", o.GetSize(), size)}
	}
	if cs := o.GetChecksums(); !w.cfg.noCRC32C && cs != nil && cs.Crc32C != nil && cs.GetCrc32C() != w.ch.CRC32C() {
		return &Error{Op: "Close", Bucket: w.bucket, Object: w.object, Code: codes.DataLoss,
			Err: fmt.Errorf("the service reports CRC32C %08x, %08x was written", cs.GetCrc32C(), w.ch.CRC32C())}
	}
	w.attrs = attrsFromObject(o)
	if w.cfg.progress != nil {
		w.cfg.progress(size)
	}
	return nil
}

// retryable reports whether err is transient and the upload's context is alive.
func (w *Writer) retryable(err error) bool {
	if w.ctx.Err() != nil || w.c.retry.Idempotency == RetryNever {
		return false
	}
	if errors.Is(err, errChunkTimeout) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	switch codeOf(err) {
	case codes.Unavailable, codes.ResourceExhausted, codes.Internal, codes.Aborted, codes.DeadlineExceeded:
		return true
	case codes.Canceled:
		// Our own stream cancellation (a chunk timeout); the caller's
		// context is alive (checked above).
		return errors.Is(err, errChunkTimeout)
	}
	return false
}
