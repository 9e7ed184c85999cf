package uploader

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader/internal/mode"
	"github.com/objup/objup/uploader/internal/retry"
	"github.com/objup/objup/uploader/internal/tenant"
	"github.com/objup/objup/uploader/internal/xfer"
)

// host is the Writer as its mode sees it (mode.Host). It is a type of its
// own so that the methods a mode needs are not the Writer's API; a
// *host is a *Writer.
type host Writer

// choose returns the mode of an upload whose first chunk, c, is full: a
// parallel composite upload if the Writer was made WithParallelUpload,
// the appendable object's session if it is one, else a resumable session.
// The content type is sniffed from c.
func (w *Writer) choose(c chunker.Chunk) mode.Mode {
	w.spec(c.Data, -1)
	h := (*host)(w)
	switch {
	case w.cfg.parallel != nil:
		w.checkpoints().setSpec(&w.req.Scratch.Spec)
		cfg := *w.cfg.parallel
		cfg.Exact = w.cfg.journal() != nil
		return mode.NewParallel(h, cfg)
	case w.req.App != nil:
		return mode.NewAppend(h)
	}
	return mode.NewSession(h)
}

// single returns the mode of an object whose whole content is its last
// chunk, at Close: one write (for an appendable object, a stream that
// creates and finalizes it in one round trip), or the appendable session
// when the object is to stay unfinalized.
func (w *Writer) single(last chunker.Chunk) mode.Mode {
	if a := w.req.App; a != nil && (a.Unfinalized || a.Takeover) {
		return w.choose(last)
	}
	if w.cfg.resumable {
		w.spec(last.Data, int64(len(last.Data)))
		return mode.NewSession((*host)(w))
	}
	return mode.OneShot[*host]{H: (*host)(w)}
}

func (h *host) w() *Writer { return (*Writer)(h) }

// Request is the upload's request.
func (h *host) Request() *xfer.Request { return &h.req }

// Transport is the client's transport.
func (h *host) Transport() xfer.Transport { return h.w().client().tr }

// Engine is the upload's retry engine.
func (h *host) Engine() *retry.Engine { return &h.retry }

// Events is what the upload reports.
func (h *host) Events() mode.Events { return &h.ev }

// NewEvents returns the events of another call of the upload to t.
func (h *host) NewEvents(t *xfer.Target, span trace.Span) mode.Events {
	ev := newEvents(t, span)
	return &ev
}

// Chunker is the Writer's chunker.
func (h *host) Chunker() *chunker.Chunker { return &h.ch }

// Spec completes the object's spec (see Writer.spec).
func (h *host) Spec(first []byte, size int64) { h.w().spec(first, size) }

// Checksums sets the checksums the finish sends (see Writer.checksums).
func (h *host) Checksums() { h.req.Scratch.HasSums = h.w().checksums() != nil }

// SentCRCMismatch checks the caller's CRC32C (see Writer.sentCRCMismatch).
func (h *host) SentCRCMismatch() error { return h.w().sentCRCMismatch() }

// TryBuffer takes an empty buffer if one is free at once.
func (h *host) TryBuffer() (*[]byte, bool) {
	if t, ok := h.req.Life.Alloc.(tenant.TryGetter); ok {
		return t.TryGet()
	}
	return nil, false
}

// WaitBuffer waits for a buffer, as ctx allows. Waits for the client's
// pool are served tenant by tenant (see tenant.FairGet); the Writer's own
// WithBuffer slots wait for nobody else.
func (h *host) WaitBuffer(ctx context.Context) (*[]byte, error) {
	switch a := h.req.Life.Alloc.(type) {
	case *tenant.Alloc, *pool.Fixed:
		return a.Get(ctx)
	}
	return tenant.FairGet(ctx, h.req.Life.Alloc, h.w().client().tenants.Share(tenant.Of(h.req.Ctx)))
}

// Background runs f in the client's background.
func (h *host) Background(f func()) { h.w().client().background(f) }

// Window is the in-flight window of a session with chunks of size bytes.
func (h *host) Window(size int) (floor, start, limit int64) { return h.w().client().window(size) }

// Conns is the number of connections that carry data.
func (h *host) Conns() int { return h.w().client().conns }

// Progress is told of the bytes the service stored.
func (h *host) Progress() *mode.Progress { return h.cfg.progress() }

// Logger logs the upload's events.
func (h *host) Logger() *slog.Logger { return h.w().client().tel.Logger() }

// Checkpoints takes the upload's checkpoints (see Writer.Handle).
func (h *host) Checkpoints() xfer.Checkpointer { return h.w().checkpoints() }

// waited records a wait for a buffer that began at start.
func (w *Writer) waited(start time.Time) { w.ev.Waited(time.Since(start)) }
