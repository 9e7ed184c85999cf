package uploader

import (
	"context"
	"errors"
	"time"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/pool"
)

// mode is the way an upload's chunks reach the service, chosen when the
// first chunk is full, or at Close: one write (oneShot), a resumable
// session (session), a parallel composite upload (parallel); an
// appendable write is a fourth. The Writer fills chunks and hands each to
// its mode, which owns it from then on (its lifetime, its retries); the
// Writer never asks which mode it has. connect-go's StreamingClientConn,
// one interface over protocols written apart, is the model.
//
// Every method runs on the Writer's goroutine. A mode takes empty buffers
// from the Writer's allocator (buffers), since only the mode knows what
// gives buffers back while the Writer waits for one.
type mode interface {
	// push takes a full chunk. It may wait, as the upload's context
	// allows, while the mode holds all it may.
	push(c chunker.Chunk) error
	// buffer returns an empty buffer for the next chunk.
	buffer() (*[]byte, error)
	// finish takes the last chunk (it may hold no data) and returns the
	// object the service stored; the Writer checks it against what was
	// written.
	finish(last chunker.Chunk) (*wire.Object, error)
	// abort abandons the upload after its failure: nothing of it will be
	// stored.
	abort(err error)
	// close releases what the mode holds once the upload ended. Work that
	// must outlive the Writer's call goes to the client's background.
	close()
	// path names the mode in telemetry.
	path() string
	// flush makes what was written durable, with c, the data not yet
	// handed over (it may hold none), and returns the service's persisted
	// size; ctx bounds the wait for the service's answer. Only an
	// appendable object flushes: the Writer refuses a Flush before it
	// reaches another mode.
	flush(ctx context.Context, c chunker.Chunk) (int64, error)
}

// choose returns the mode of an upload whose first chunk, c, is full: a
// parallel composite upload if the Writer was made WithParallelUpload,
// else a resumable session. The content type is sniffed from c.
func (w *Writer) choose(c chunker.Chunk) mode {
	w.spec(c.Data, -1)
	if p := w.cfg.parallel; p != nil {
		p.start(w)
		return p
	}
	if w.req.App != nil {
		return &appendMode{session{w: w}}
	}
	return &session{w: w}
}

// errNoFlush is a flush of a mode that has none: the Writer refuses a
// Flush of an object that is not appendable before it reaches its mode.
var errNoFlush = errors.New("uploader: only an appendable object flushes")

// tryBuffer takes an empty buffer if one is free at once.
func (w *Writer) tryBuffer() (*[]byte, bool) {
	if t, ok := w.req.Life.Alloc.(tryGetter); ok {
		return t.TryGet()
	}
	return nil, false
}

// waitBuffer waits for a buffer, as ctx allows. Waits for the client's
// pool are served tenant by tenant (see fairGet); the Writer's own
// WithBuffer slots wait for nobody else.
func (w *Writer) waitBuffer(ctx context.Context) (*[]byte, error) {
	switch a := w.req.Life.Alloc.(type) {
	case *tenantAlloc, *pool.Fixed:
		return a.Get(ctx)
	}
	return fairGet(ctx, w.req.Life.Alloc, w.client().tenants.share(tenantOf(w.req.Ctx)))
}

// waited records a wait for a buffer that began at start.
func (w *Writer) waited(start time.Time) { w.ev.Waited(time.Since(start)) }

// oneShot is the mode of an object that fits in its first chunk: one
// WriteObject call (see Writer.writeOnce). It holds nothing between
// calls, so its interface value costs no allocation.
type oneShot struct{ w *Writer }

func (m oneShot) push(chunker.Chunk) error {
	panic("uploader: a one-shot upload takes no full chunk")
}

func (m oneShot) buffer() (*[]byte, error) {
	panic("uploader: a one-shot upload takes no buffer")
}

func (m oneShot) finish(last chunker.Chunk) (*wire.Object, error) {
	return m.w.writeOnce(m.w.req.Life.NewRef(last))
}

func (oneShot) abort(error)  {}
func (oneShot) close()       {}
func (oneShot) path() string { return pathOneShot }

func (oneShot) flush(context.Context, chunker.Chunk) (int64, error) { return 0, errNoFlush }

// session is the mode of a resumable upload: its first chunk opens the
// session (see resumable), which streams the chunks with a bounded window
// and resumes after failures.
type session struct {
	w *Writer
	s *resumable // nil until the first push
}

func (m *session) push(c chunker.Chunk) error {
	r := m.w.req.Life.NewRef(c)
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
	w := m.w
	tr := w.client().tr
	floor, start, limit := w.client().window(w.ch.ChunkSize())
	s, err := startResumable(&w.req, tr, &w.retry, &w.ev, tr.Window(floor), tr.Window(start), tr.Window(limit), w.cfg.progress)
	if err != nil {
		return err
	}
	m.s = s
	return nil
}

// buffer takes an empty buffer. A wait for one (under a pool budget, or
// for a WithBuffer slot) gives way when the session's stream breaks: the
// chunks the stream holds come back only once the session resumes and the
// service acknowledges them, so the loop resumes the session first and
// then waits again, instead of waiting for itself.
func (m *session) buffer() (*[]byte, error) {
	w, s := m.w, m.s
	if b, ok := w.tryBuffer(); ok {
		return b, nil
	}
	defer w.waited(time.Now())
	// The session keeps chunks back to send them together; since the
	// buffer must be waited for, they go out first: they come back only
	// once sent and persisted.
	s.contended()
	if err := s.flush(); err != nil {
		return nil, err
	}
	for {
		b, err := w.waitBuffer(s.waitContext())
		if err == nil || w.req.Ctx.Err() != nil {
			return b, err
		}
		if err := s.recover(); err != nil {
			return nil, err
		}
	}
}

// finish sends the last chunk and the finish with the object's checksums.
// When the finish may have gone out and the upload failed, the session
// decides the outcome (see resumable.settle).
func (m *session) finish(last chunker.Chunk) (*wire.Object, error) {
	w := m.w
	r := w.req.Life.NewRef(last)
	if err := m.start(); err != nil {
		r.Unref()
		return nil, err
	}
	w.req.Scratch.HasSums = w.checksums() != nil
	o, err := m.s.finish(r)
	if err != nil {
		o, err = m.s.settle(err)
	}
	return o, err
}

func (m *session) abort(err error) {
	if m.s != nil {
		m.s.abort(err)
	}
}

func (m *session) close() {
	if m.s != nil {
		m.s.close()
	}
}

func (m *session) path() string { return pathResumable }

func (*session) flush(context.Context, chunker.Chunk) (int64, error) { return 0, errNoFlush }
