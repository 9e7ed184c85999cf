package uploader

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader/internal/mode"
	"github.com/objup/objup/uploader/internal/tenant"
	"github.com/objup/objup/uploader/internal/xfer"
)

// choose returns the mode of an upload whose first chunk, c, is full: a
// parallel composite upload if the Writer was made WithParallelUpload,
// the appendable object's session if it is one, else a resumable session.
// The content type is sniffed from c.
func (w *Writer) choose(c chunker.Chunk) mode.Streaming {
	w.spec(c.Data, -1)
	switch {
	case w.cfg.parallel != nil:
		w.checkpoints().setSpec(&w.req.Scratch.Spec)
		cfg := *w.cfg.parallel
		cfg.Exact = w.cfg.journal() != nil
		return mode.NewParallel(w.params(), cfg)
	case w.req.App != nil:
		return mode.NewAppend(w.params())
	}
	return mode.NewSession(w.params())
}

// single returns the streaming mode of an object whose whole content is
// its last chunk, at Close, or nil when it goes out in one write (see
// oneShot): the appendable session when the object is to stay
// unfinalized, a resumable session WithResumable.
func (w *Writer) single(last chunker.Chunk) mode.Streaming {
	if a := w.req.App; a != nil && (a.Unfinalized || a.Takeover) {
		return w.choose(last)
	}
	if w.cfg.resumable {
		w.spec(last.Data, int64(len(last.Data)))
		return mode.NewSession(w.params())
	}
	return nil
}

// oneShot is the mode of an object that goes out in one write (for an
// appendable object, a stream that creates and finalizes it in one round
// trip), with its spec: the content type sniffed from last, and its size
// unless the object is appendable (its writes make its size).
func (w *Writer) oneShot(last chunker.Chunk) mode.OneShot {
	size := int64(len(last.Data))
	if w.req.App != nil {
		size = -1
	}
	w.spec(last.Data, size)
	return mode.OneShot{Request: &w.req, Transport: w.client().tr, Engine: &w.retry}
}

// finalize completes the request before the mode's Finish, with what the
// Writer knows once the last chunk is in: a parallel upload's object size
// (its compose, or its multipart complete, carries the spec), and the
// whole-object checksums the finish sends, unless the object is to stay
// unfinalized.
func (w *Writer) finalize() {
	if w.cfg.parallel != nil {
		w.spec(nil, w.ch.Size())
	}
	if a := w.req.App; a == nil || !a.Unfinalized {
		w.req.Scratch.HasSums = w.checksums() != nil
	}
}

// params returns what the Writer gives its mode (see mode.Params), once.
func (w *Writer) params() mode.Params {
	c := w.client()
	floor, start, limit := c.window(w.ch.ChunkSize())
	p := mode.Params{
		Request:   &w.req,
		Transport: c.tr,
		Engine:    &w.retry,
		Events:    &w.ev,
		Chunker:   &w.ch,
		Window:    mode.WindowBounds{Floor: floor, Start: start, Limit: limit},
		Conns:     c.conns,
		Progress:  w.cfg.progress(),
		Logger:    c.tel.Logger(),
		Buffers:   (*buffers)(w),
		Services:  (*services)(c),
	}
	if w.req.App == nil {
		// An appendable object's Writer notes its flushes itself (see
		// flushed).
		p.Checkpoints = w.checkpoints()
	}
	return p
}

// buffers is the Writer as the giver of its chunk buffers (mode.Buffers):
// a type of its own so that its methods are not the Writer's API; a
// *buffers is a *Writer.
type buffers Writer

// TryBuffer takes an empty buffer if one is free at once.
func (b *buffers) TryBuffer() (*[]byte, bool) {
	if t, ok := b.req.Life.Alloc.(tenant.TryGetter); ok {
		return t.TryGet()
	}
	return nil, false
}

// WaitBuffer waits for a buffer, as ctx allows. Waits for the client's
// pool are served tenant by tenant (see tenant.FairGet); the Writer's own
// WithBuffer slots wait for nobody else.
func (b *buffers) WaitBuffer(ctx context.Context) (*[]byte, error) {
	switch a := b.req.Life.Alloc.(type) {
	case *tenant.Alloc, *pool.Fixed:
		return a.Get(ctx)
	}
	return tenant.FairGet(ctx, b.req.Life.Alloc, (*Writer)(b).client().tenants.Share(tenant.Of(b.req.Ctx)))
}

// services is the client as its Writers' modes see it (mode.Services).
type services Client

// Background runs f in the client's background.
func (s *services) Background(f func()) { (*Client)(s).background(f) }

// NewEvents returns the events of another call of an upload to t.
func (s *services) NewEvents(t *xfer.Target, span trace.Span) mode.Events {
	return (*Client)(s).newCallEvents(t, span)
}

// buffer takes an empty buffer: from the mode once there is one, which
// knows what gives buffers back, else from the allocator.
func (w *Writer) buffer() (*[]byte, error) {
	if w.mode != nil {
		return w.mode.Buffer()
	}
	if b, ok := (*buffers)(w).TryBuffer(); ok {
		return b, nil
	}
	// A wait: the pool's budget (or the tenant's) is spent, or the
	// WithBuffer slots are taken.
	defer w.waited(time.Now())
	return (*buffers)(w).WaitBuffer(w.req.Ctx)
}

// release gives back every buffer: the chunker's, and the chunks in flight once
// gRPC has let go of them.
//
// gRPC lets go of a torn-down stream's messages a moment after the stream
// ends, or never (see [xfer.Lifetime.Wait], which waits up to about a second). Once
// the upload's context ended, the pool's buffers are waited for in the
// background (Client.Close waits for it), so the call returns by
// about a second after it; a WithBuffer buffer, which the caller owns again when
// Close returns, is always waited for.
func (w *Writer) release() {
	w.req.Life.PutBuffer(w.ch.Abort())
	if w.mode != nil {
		w.mode.Close()
	}
	if w.req.Ctx.Err() != nil && !w.cfg.hasBuffer && w.req.Life.Holding() {
		w.client().background(w.buffersBack)
		return
	}
	w.buffersBack()
}

// buffersBack waits until every buffer of the upload is back, and then
// gives back its tenant's slot.
func (w *Writer) buffersBack() {
	w.req.Life.Wait()
	if a, ok := w.req.Life.Alloc.(*tenant.Alloc); ok {
		a.Done()
	}
}

// waited records a wait for a buffer that began at start.
func (w *Writer) waited(start time.Time) { w.ev.Waited(time.Since(start)) }
