package mode

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/retry"
	"github.com/objup/objup/uploader/internal/xfer"
)

// Mode is the way an upload's chunks reach the service, chosen by the
// Writer when the first chunk is full, or at Close. The Writer fills
// chunks and hands each to its mode, which owns it from then on (its
// lifetime, its retries); the Writer never asks which mode it has.
// connect-go's StreamingClientConn, one interface over protocols written
// apart, is the model.
//
// Mode is what every mode does; Streaming adds what a mode that takes
// full chunks does, and Flusher what an appendable object's does. Every
// method runs on the Writer's goroutine. The Writer completes the
// object's spec and whole-object checksums before Finish (see Params).
// A mode's failures are *xfer.OpError, or its Buffers' own errors.
type Mode interface {
	// Finish takes the last chunk (it may hold no data) and returns the
	// object the service stored; the Writer checks it against what was
	// written.
	Finish(last chunker.Chunk) (*wire.Object, error)
	// Abort abandons the upload after its failure: nothing of it will be
	// stored.
	Abort(err error)
	// Close releases what the mode holds once the upload ended. Work that
	// must outlive the Writer's call goes to its Services' Background.
	Close()
	// Path names the mode in telemetry.
	Path() string
}

// Streaming is a mode that takes the upload's full chunks as they fill.
// It takes empty buffers from its Buffers, since only the mode knows what
// gives buffers back while the Writer waits for one.
type Streaming interface {
	Mode
	// Push takes a full chunk. It may wait, as the upload's context
	// allows, while the mode holds all it may.
	Push(c chunker.Chunk) error
	// Buffer returns an empty buffer for the next chunk.
	Buffer() (*[]byte, error)
}

// Flusher is a mode that flushes: only an appendable object's (the Writer
// refuses a Flush of any other before it reaches its mode).
type Flusher interface {
	// Flush makes what was written durable, with c, the data not yet
	// handed over (it may hold none), and returns the service's persisted
	// size; ctx bounds the wait for the service's answer.
	Flush(ctx context.Context, c chunker.Chunk) (int64, error)
}

// Upload paths, the "path" attribute of telemetry.
const (
	PathOneShot    = "one-shot"
	PathResumable  = "resumable"
	PathParallel   = "parallel"
	PathMultipart  = "multipart"
	PathAppendable = "appendable"
)

// Params is what a mode is given once, when its Writer chooses it: the
// upload's fixed values, and the two services it calls. connect-go's
// protocolParams is the model. The Writer completes the object's spec
// (its content type, sniffed from the first chunk, and the size it knows
// at Close) and its whole-object checksums in Request before it hands the
// upload to a mode: nothing calls back into the Writer.
type Params struct {
	// Request is the upload's request, which the transport reads.
	Request *xfer.Request
	// Transport is the client's transport, with admission.
	Transport xfer.Transport
	// Engine is the upload's retry engine.
	Engine *retry.Engine
	// Events is what the upload reports.
	Events Events
	// Chunker is the Writer's chunker: its chunk size, and the size and
	// CRC32C of what was written (final at Finish).
	Chunker *chunker.Chunker
	// Window is the in-flight window of a session with the chunker's
	// chunks.
	Window WindowBounds
	// Conns is the number of connections that carry data.
	Conns int
	// Progress is told of the bytes the service stored; nil: nobody.
	Progress *Progress
	// Logger logs the upload's events; nil: nowhere.
	Logger *slog.Logger
	// Checkpoints takes what a later process needs to continue the
	// upload (see xfer.Checkpoint); nil: nothing (an appendable object,
	// whose Writer notes its flushes itself).
	Checkpoints xfer.Checkpointer
	// Buffers gives empty chunk buffers.
	Buffers Buffers
	// Services runs work after the Writer's call and makes the events of
	// the upload's other calls.
	Services Services
}

// WindowBounds are the bytes a session may have pushed and not
// persisted: where the window starts, and what it may shrink to and grow
// to (see package window), before the transport's Window.
type WindowBounds struct {
	Floor, Start, Limit int64
}

// Buffers gives a mode empty chunk buffers.
type Buffers interface {
	// TryBuffer takes an empty buffer if one is free at once.
	TryBuffer() (*[]byte, bool)
	// WaitBuffer waits for an empty buffer, as ctx allows.
	WaitBuffer(ctx context.Context) (*[]byte, error)
}

// Services is what a mode's client does for it beyond one call.
type Services interface {
	// Background runs f after the Writer's call returned; the client's
	// Close waits for it.
	Background(f func())
	// NewEvents returns the events of another call of the upload (a
	// part, a cleanup's call) to t, whose span events go to span.
	NewEvents(t *xfer.Target, span trace.Span) Events
}

// Events is what a mode reports of its upload.
type Events interface {
	retry.Events
	xfer.Events
	// Resumed reports a session resumed at offset after cause.
	Resumed(offset int64, cause error)
	// Waited reports a wait of d for a buffer.
	Waited(d time.Duration)
	// Span is the upload's span, or nil.
	Span() trace.Span
	// Retries is the number of retries so far.
	Retries() int32
	// LogAttrs returns the upload's log attributes followed by extra.
	LogAttrs(extra ...slog.Attr) []slog.Attr
}

// do runs attempt in r's loop (see retry.Engine.Do) and returns its
// failure as an *xfer.OpError on t's object for the operation that failed
// last.
func do(r *retry.Engine, t *xfer.Target, op string, idempotent bool, cause error, attempt func() (op string, sent bool, err error)) error {
	if op, err := r.Do(t.Ctx, op, idempotent, cause, attempt); err != nil {
		return xfer.Fail(t, op, err)
	}
	return nil
}

// waited reports to ev a wait for a buffer that began at start.
func waited(ev Events, start time.Time) { ev.Waited(time.Since(start)) }

// session is the mode of a resumable upload: its first chunk opens the
// session (see resumable), which streams the chunks with a bounded window
// and resumes after failures.
type session struct {
	Params
	s    *resumable // nil until the first push
	from *Resume    // the session an earlier Writer began, or nil
}

// NewSession returns the mode of a resumable upload with p.
func NewSession(p Params) Streaming { return &session{Params: p} }

// NewResumedSession returns the mode of a resumable upload with p that
// goes on with the session from: the Writer's chunks start at
// from.Persisted.
func NewResumedSession(p Params, from Resume) Streaming {
	return &session{Params: p, from: &from}
}

func (m *session) Push(c chunker.Chunk) error {
	r := m.Request.Life.NewRef(c)
	if err := m.start(); err != nil {
		r.Unref()
		return err
	}
	return m.s.push(r)
}

// start opens the session, once.
func (m *session) start() error {
	if m.s != nil {
		return nil
	}
	s, err := startResumable(&m.Params, m.from)
	if err != nil {
		return err
	}
	m.s = s
	return nil
}

// Buffer takes an empty buffer. A wait for one (under a pool budget, or
// for a WithBuffer slot) gives way when the session's stream breaks: the
// chunks the stream holds come back only once the session resumes and the
// service acknowledges them, so the loop resumes the session first and
// then waits again, instead of waiting for itself.
func (m *session) Buffer() (*[]byte, error) {
	s := m.s
	if b, ok := m.Buffers.TryBuffer(); ok {
		return b, nil
	}
	defer waited(m.Events, time.Now())
	// The session keeps chunks back to send them together; since the
	// buffer must be waited for, they go out first: they come back only
	// once sent and persisted.
	s.contended()
	if err := s.flush(); err != nil {
		return nil, err
	}
	for {
		b, err := m.Buffers.WaitBuffer(s.waitContext())
		if err == nil || m.Request.Ctx.Err() != nil {
			return b, err
		}
		if err := s.recover(); err != nil {
			return nil, err
		}
	}
}

// Finish sends the last chunk and the finish with the object's checksums.
// When the finish may have gone out and the upload failed, the session
// decides the outcome (see resumable.settle).
func (m *session) Finish(last chunker.Chunk) (*wire.Object, error) {
	r := m.Request.Life.NewRef(last)
	if err := m.start(); err != nil {
		r.Unref()
		return nil, err
	}
	o, err := m.s.finish(r)
	if err != nil {
		o, err = m.s.settle(err)
	}
	return o, err
}

func (m *session) Abort(err error) {
	if m.s != nil {
		m.s.abort(err)
	}
}

func (m *session) Close() {
	if m.s != nil {
		m.s.close()
	}
}

func (m *session) Path() string { return PathResumable }

// Unsettled reports whether a failure of the upload leaves its outcome to
// the service: a session an earlier Writer began, whose finish may have
// gone out (see resumable.Unsettled).
func (m *session) Unsettled() bool { return m.from != nil }
