package mode

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/objup/objup/uploader/internal/xfer"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/internal/wire"
)

// push takes a full chunk into the part being filled, and hands the part
// to a goroutine once it has PartSize bytes.
func (p *parallel) Push(c chunker.Chunk) error {
	if p.cur == nil {
		if p.mp != nil && len(p.parts) >= maxMultipartParts {
			u := p.Request
			return &xfer.OpError{Op: xfer.MultipartNames.Part, Bucket: u.Bucket, Object: u.Object, Code: codes.InvalidArgument, Err: errTooManyParts}
		}
		p.cur = p.newPart(len(p.parts))
	}
	pt := p.cur
	if len(pt.refs) == 0 {
		pt.base = c.Offset
	}
	// A part is an object of its own: its chunks' offsets start at 0.
	c.Offset -= pt.base
	r := p.life.NewRef(c)
	pt.refs = append(pt.refs, r)
	pt.Scratch.CRC = crc32c.Combine(pt.Scratch.CRC, r.CRC32C, int64(len(r.Data)))
	pt.size += int64(len(r.Data))
	if pt.size >= p.cutAt(pt) {
		return p.dispatch()
	}
	return nil
}

// cutAt is the size at which part pt goes out: PartSize, or the size of
// the part an earlier Writer stored under its index, so that it can be
// reused.
func (p *parallel) cutAt(pt *part) int64 {
	if s := p.storedPart(pt.index); s != nil && s.Offset == pt.base {
		return s.Size
	}
	if p.mp != nil {
		return p.partSizeAt(pt.index)
	}
	return p.partSize
}

// storedPart returns the part an earlier Writer stored under index i, or
// nil.
func (p *parallel) storedPart(i int) *xfer.StoredPart {
	for j := range p.cfg.Stored {
		if p.cfg.Stored[j].Index == i {
			return &p.cfg.Stored[j]
		}
	}
	return nil
}

// announce notes the upload's temporary prefix, and part pt, in the
// upload's checkpoint before pt's first byte goes out, so that a later
// process finds every temporary object the upload may leave.
func (p *parallel) announce(pt *part) error {
	note := xfer.StoredPart{Index: pt.index, Offset: pt.base, Size: pt.size, CRC32C: pt.Scratch.CRC}
	return p.Checkpoints.Update(func(c *xfer.Checkpoint) {
		if n := c.Part(pt.index); n != nil {
			*n = note
		} else {
			c.Parts = append(c.Parts, note)
		}
	}, true)
}

// noteSession notes in the upload's checkpoint, before any byte of it
// goes out, the session of part pt.
func (p *parallel) noteSession(pt *part, id string) error {
	return p.Checkpoints.Update(func(c *xfer.Checkpoint) {
		if n := c.Part(pt.index); n != nil {
			n.Session = id
		}
	}, true)
}

// noteStored notes in the upload's checkpoint that the service stored part pt.
func (p *parallel) noteStored(pt *part) {
	note := xfer.StoredPart{Index: pt.index, Offset: pt.base, Size: pt.size, CRC32C: pt.Scratch.CRC, Gen: pt.gen, ETag: pt.etag}
	_ = p.Checkpoints.Update(func(c *xfer.Checkpoint) {
		if n := c.Part(pt.index); n != nil {
			*n = note
		} else {
			c.Parts = append(c.Parts, note)
		}
	}, false)
}

// reuse reports whether an earlier Writer stored part pt with the same
// bytes; then pt takes that part's generation and drops its chunks.
func (p *parallel) reuse(pt *part) bool {
	s := p.storedPart(pt.index)
	if s == nil || s.Gen == 0 && s.ETag == "" || s.Offset != pt.base || s.Size != pt.size || s.CRC32C != pt.Scratch.CRC {
		return false
	}
	pt.gen, pt.etag = s.Gen, s.ETag
	for _, r := range pt.refs {
		r.Unref()
	}
	pt.refs = nil
	p.parts = append(p.parts, pt)
	p.mu.Lock()
	p.stored += pt.size
	stored := p.stored
	p.mu.Unlock()
	p.Progress.Report(stored)
	return true
}

// newPart returns part i, an object of its own under the upload's prefix,
// written only if it does not exist yet (so a retried write is harmless).
func (p *parallel) newPart(i int) *part {
	u := p.Request
	pt := &part{index: i}
	pt.Target = xfer.Target{Ctx: p.ctx, Bucket: u.Bucket, Object: p.prefix + "part-" + strconv.Itoa(i), Params: u.Params}
	if p.mp != nil {
		// A part of a multipart upload is a part of the object.
		pt.Object = u.Object
	}
	initSpec(&pt.Request, u)
	pt.ev = p.Services.NewEvents(&pt.Target, p.Events.Span())
	pt.Life.Ev = pt.ev
	pt.retry.Init(p.Engine.Config(), pt.ev)
	return pt
}

// initSpec makes u's spec that of a temporary object of w's upload.
func initSpec(u, w *xfer.Request) {
	u.Scratch.Spec.Resource = &u.Scratch.Object
	u.Scratch.Object.Name, u.Scratch.Object.Bucket = u.Object, w.Resource()
	u.Scratch.Object.ContentType = "application/octet-stream"
	u.Scratch.Spec.IfGenerationMatch = new(int64)
}

// dispatch hands the part being filled to a goroutine of its own. It waits
// while Parts parts are uploading, as the upload's context allows: a part
// that does not get its turn is dropped, and the upload fails.
func (p *parallel) dispatch() error {
	pt := p.cur
	p.cur = nil
	if !p.announced {
		// The upload's prefix, and the parts an earlier Writer stored,
		// before anything else goes out.
		p.announced = true
		var err error
		if p.mp != nil {
			err = p.initiate()
		} else {
			err = p.probeDelete()
		}
		if err == nil {
			err = p.Checkpoints.Update(func(c *xfer.Checkpoint) {
				p.noteUpload(c)
				c.Parts = append(c.Parts[:0], p.cfg.Stored...)
				if p.cfg.Composing {
					c.Composing, c.ComposeMatch, c.HasMatch = true, p.cfg.ComposeMatch, p.cfg.HasMatch
				}
			}, true)
		}
		if err != nil {
			for _, r := range pt.refs {
				r.Unref()
			}
			pt.refs = nil
			u := p.Request
			return &xfer.OpError{Op: p.tr.Names().Write, Bucket: u.Bucket, Object: u.Object, Code: xfer.CodeOf(err), Err: err}
		}
	}
	if p.reuse(pt) {
		return nil
	}
	if s := p.storedPart(pt.index); s != nil && s.Gen != 0 {
		// An earlier Writer stored other bytes under this name: they
		// are replaced, that generation only.
		gen := s.Gen
		pt.Scratch.Spec.IfGenerationMatch = &gen
	}
	// A multipart upload's part needs no note before it goes out: one the
	// notes do not name is sent again, or dropped by the complete or the
	// abort.
	if p.mp == nil {
		if err := p.announce(pt); err != nil {
			for _, r := range pt.refs {
				r.Unref()
			}
			pt.refs = nil
			u := p.Request
			return &xfer.OpError{Op: p.tr.Names().Write, Bucket: u.Bucket, Object: u.Object, Code: xfer.CodeOf(err), Err: err}
		}
	}
	if err := p.slots.Acquire(p.ctx, 1); err != nil {
		for _, r := range pt.refs {
			r.Unref()
		}
		pt.refs = nil
		return p.failure(err)
	}
	pt.Scratch.Checksums.Crc32C = &pt.Scratch.CRC
	pt.Scratch.HasSums = true
	p.parts = append(p.parts, pt)
	p.mu.Lock()
	p.inflight++
	p.mu.Unlock()
	p.g.Go(func() error {
		defer p.ended()
		err := p.send(pt)
		if err != nil {
			// Cancelled before the turn frees, so no part starts after a
			// failure.
			p.cancel()
		}
		p.slots.Release(1)
		return err
	})
	if err := p.ctx.Err(); err != nil {
		return p.failure(err)
	}
	return nil
}

// send uploads part pt through a resumable session of its own and drops
// its chunks once done. The session makes the part's outcome exact, as
// for any session (see resumable.settle): after a lost answer the session
// is asked; a part that fails once its finish may have gone out has its
// session cancelled, so that nothing of it can be stored after the
// cleanup; only a session the service cannot be reached to settle leaves
// the part unknown, and the cleanup deletes it by name.
func (p *parallel) send(pt *part) error {
	if err := p.ctx.Err(); err != nil {
		// Another part failed while this one waited for its turn.
		for _, r := range pt.refs {
			r.Unref()
		}
		pt.refs = nil
		return err
	}
	start := time.Now()
	names := p.tr.Names()
	var err error
	if p.mp != nil {
		err = p.sendPart(pt)
	} else {
		var o *wire.Object
		o, err = p.sendSession(pt)
		if err == nil {
			err = pt.check(o)
		}
	}
	pt.refs = nil
	pt.sent = xfer.Unknown(err)
	p.event(pt, start, err)
	if err != nil {
		u := p.Request
		return &xfer.OpError{Op: names.Write, Bucket: u.Bucket, Object: u.Object, Code: xfer.CodeOf(err),
			Err: &partError{index: pt.index, name: pt.Object, err: err}}
	}
	p.noteStored(pt)
	p.mu.Lock()
	p.stored += pt.size
	stored := p.stored
	p.mu.Unlock()
	p.Progress.Report(stored)
	return nil
}

// sendSession opens pt's session, hands it pt's chunks and finishes it.
func (p *parallel) sendSession(pt *part) (*wire.Object, error) {
	refs := pt.refs
	s, err := startResumable(&Params{Request: &pt.Request, Transport: p.tr, Engine: &pt.retry, Events: pt.ev,
		Window: WindowBounds{pt.size, pt.size, pt.size}, Services: p.Services}, nil)
	if err != nil {
		for _, r := range refs {
			r.Unref()
		}
		return nil, err
	}
	defer s.close()
	if err := p.noteSession(pt, s.id); err != nil {
		s.abort(err)
		for _, r := range refs {
			r.Unref()
		}
		return nil, err
	}
	for _, r := range refs[:len(refs)-1] {
		s.take(r)
	}
	o, err := s.finish(refs[len(refs)-1])
	if err != nil {
		o, err = s.settle(err)
		switch {
		case xfer.Unknown(err):
			// The cleanup settles the session, with time of its own.
			pt.session = s.id
		case err != nil:
			s.abort(err)
		}
	}
	if o != nil {
		// The service has every byte of the part: gRPC wrote every
		// message, and what it has not freed (a frame of a stream that
		// ended, see outMsg) it never reads again. The part's buffers go
		// back now, for the parts still to fill.
		pt.Life.ForceRelease()
	}
	return o, err
}

// check checks the stored part against what was sent.
func (pt *part) check(o *wire.Object) error {
	if o == nil {
		return errors.New("the service stored the part without returning it")
	}
	pt.gen = o.GetGeneration()
	if o.GetSize() != pt.size {
		return &xfer.OpError{Op: "WriteObject", Bucket: pt.Bucket, Object: pt.Object, Code: codes.DataLoss,
			Err: fmt.Errorf("the service stored %d bytes of the part, %d were sent", o.GetSize(), pt.size)}
	}
	if cs := o.GetChecksums(); cs != nil && cs.Crc32C != nil && cs.GetCrc32C() != pt.Scratch.CRC {
		return &xfer.OpError{Op: "WriteObject", Bucket: pt.Bucket, Object: pt.Object, Code: codes.DataLoss,
			Err: fmt.Errorf("the service reports CRC32C %08x for the part, %08x was sent", cs.GetCrc32C(), pt.Scratch.CRC)}
	}
	return nil
}

// partError is the failure of one part, which fails the upload with the
// part's cause.
type partError struct {
	index int
	name  string
	err   error
}

func (e *partError) Error() string {
	return fmt.Sprintf("part %d (%s): %v", e.index, e.name, e.err)
}

func (e *partError) Unwrap() error { return e.err }

// event records a part's end on the upload's span, and in the log.
func (p *parallel) event(pt *part, start time.Time, err error) {
	if s := p.Events.Span(); s != nil {
		attrs := []attribute.KeyValue{
			attribute.Int("part", pt.index), attribute.String("object", pt.Object),
			attribute.Int64("bytes", pt.size), attribute.Int64("retries", int64(pt.ev.Retries())),
			attribute.Int64("duration_ms", time.Since(start).Milliseconds()),
		}
		if err != nil {
			attrs = append(attrs, attribute.String("error", err.Error()))
		}
		s.AddEvent("part", trace.WithAttributes(attrs...))
	}
	if l := p.Logger; l != nil {
		l.LogAttrs(p.Request.Ctx, slog.LevelDebug, "objup: uploaded a part", p.Events.LogAttrs(
			slog.Int("part", pt.index), slog.String("temporary", pt.Object), slog.Int64("generation", pt.gen),
			slog.Bool("sent", pt.sent),
			slog.Int64("bytes", pt.size), slog.Duration("took", time.Since(start)), slog.Any("error", err))...)
	}
}
