package mode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/retry"
	"github.com/objup/objup/uploader/internal/xfer"
)

// Limits of the XML API's multipart upload.
const (
	// MinMultipartPart is the least size of a part but the last.
	MinMultipartPart = 5 << 20
	// maxMultipartParts is the highest part number.
	maxMultipartParts = 10000
	// growEvery is how many parts go out before the part size doubles, so
	// that 10,000 parts of the default size hold GCS's largest object.
	growEvery = 1000
)

// mpState is the state of a parallel upload whose parts go through the
// XML API's multipart upload (Parallel.XML): no temporary objects, one
// object write, the complete, at the end.
//
// How each call's lost answer is settled:
//   - initiate: repeated; an upload whose answer was lost holds no part,
//     and the cleanup aborts the empty uploads of the object that began
//     from the first attempt to the answer (see sweep), where the
//     credential may list them;
//   - a part: repeated (a part number uploaded again replaces the part);
//     one that failed for good is dropped with the upload by the abort;
//   - complete: repeated; once an answer was lost, a NotFound means that
//     the lost attempt completed the upload; if every attempt failed, an
//     abort settles it: NotFound, it completed; done, nothing will be
//     stored;
//   - abort: repeated; NotFound means it is gone.
type mpState struct {
	xml       xfer.Multipart
	id        string    // the upload id; "" before the initiate's answer
	since     time.Time // when the first initiate went out
	answered  time.Time // when its answer came
	lostInit  bool      // an initiate's answer was lost: an empty upload may be left
	completed bool      // the upload completed (or is gone): nothing to abort
}

// initiate starts the multipart upload, once, before the first part goes
// out: its id goes into the upload's checkpoint first, with an fsync.
func (p *parallel) initiate() error {
	m := p.mp
	if m.id != "" {
		return nil
	}
	u := p.Request
	e := p.Engine
	m.since = time.Now()
	err := do(e, &u.Target, xfer.MultipartNames.Initiate, true, nil, func() (string, bool, error) {
		id, err := m.xml.Initiate(u, e.AttemptTimeout())
		if err != nil && retry.AnswerLost(err) {
			m.lostInit = true
		}
		m.id = id
		return "", true, err
	})
	m.answered = time.Now()
	return err
}

// sendPart uploads part pt as part number index+1, retried as a part's
// calls are, and notes its ETag.
func (p *parallel) sendPart(pt *part) error {
	defer func() {
		for _, r := range pt.refs {
			r.Unref()
		}
	}()
	m := p.mp
	var etag string
	err := do(&pt.retry, &pt.Target, xfer.MultipartNames.Part, true, nil, func() (string, bool, error) {
		var sent bool
		var err error
		etag, sent, err = m.xml.UploadPart(&pt.Request, m.id, pt.index+1, pt.refs, pt.size, pt.Scratch.CRC, pt.retry.AttemptTimeout())
		return "", sent, err
	})
	pt.etag = etag
	return err
}

// partSizeAt is the size of part i of a multipart upload: PartSize,
// doubled every growEvery parts.
func (p *parallel) partSizeAt(i int) int64 {
	s := p.partSize
	for n := i / growEvery; n > 0 && s < 5<<30; n-- {
		s *= 2
	}
	return min(s, 5<<30)
}

// complete joins the parts into the object.
func (p *parallel) complete() (*wire.Object, error) {
	h, m := &p.Params, p.mp
	u := h.Request
	parts := make([]xfer.MultipartPart, len(p.parts))
	var size int64
	for i, pt := range p.parts {
		parts[i] = xfer.MultipartPart{Number: pt.index + 1, ETag: pt.etag, Size: pt.size}
		size += pt.size
	}
	crc := h.Chunker.CRC32C()
	if err := h.Checkpoints.Update(func(c *xfer.Checkpoint) { c.Composing = true }, true); err != nil {
		return nil, &xfer.OpError{Op: xfer.MultipartNames.Complete, Bucket: u.Bucket, Object: u.Object, Code: xfer.CodeOf(err), Err: err}
	}
	e := h.Engine
	var c xfer.Completed
	lost, gone := false, false
	err := do(e, &u.Target, xfer.MultipartNames.Complete, true, nil, func() (string, bool, error) {
		var err error
		c, err = m.xml.Complete(u, m.id, parts, e.AttemptTimeout())
		switch {
		case err != nil && lost && status.Code(err) == codes.NotFound:
			// A lost attempt completed the upload.
			gone, err = true, nil
		case err != nil && retry.AnswerLost(err):
			lost = true
		}
		return "", true, err
	})
	if err != nil && lost {
		// The upload may have completed: an abort settles it.
		switch either, aerr := p.abort(u); {
		case aerr == nil && either:
			// The abort's own attempt was lost and the next found no
			// upload: the lost complete or the lost abort ended it.
			// The live object tells, when it holds what was written.
			m.completed = true
			if live := p.liveWritten(size, crc); live != nil {
				p.noteGen(live)
				return live, nil
			}
			oe := xfer.Fail(&u.Target, xfer.MultipartNames.Complete, err)
			oe.Unknown = true
			return nil, oe
		case aerr == nil:
			m.completed = true
			return nil, err
		case status.Code(aerr) == codes.NotFound:
			gone, err = true, nil
		default:
			oe := xfer.Fail(&u.Target, xfer.MultipartNames.Complete, err)
			oe.Unknown = true
			return nil, oe
		}
	}
	if err != nil {
		return nil, err
	}
	m.completed = true
	o := p.completedObject(c, gone, size, crc)
	p.noteGen(o)
	return o, nil
}

// noteGen notes the generation of the object the upload made, if known,
// in its checkpoint.
func (p *parallel) noteGen(o *wire.Object) {
	if gen := o.GetGeneration(); gen != 0 {
		_ = p.Checkpoints.Update(func(c *xfer.Checkpoint) { c.Gen = gen }, true)
	}
}

// liveWritten returns the live object if it holds what was written (its
// size and CRC32C), else nil (another object, none, or a credential that
// may not read objects).
func (p *parallel) liveWritten(size int64, crc uint32) *wire.Object {
	live := lookup(p.Services, p.Request, p.tr, p.Engine.Config())
	if live != nil && live.GetSize() == size && live.GetChecksums().GetCrc32C() == crc {
		return live
	}
	return nil
}

// completedObject is the object the upload made: what the answer says of
// it (its generation, its CRC32C), or the live object when the answer was
// lost (gone) or carried no generation, with the spec's attributes, the
// size and the CRC32C of what was written. A look-up that finds another
// object, or none (a credential that may not read objects), leaves the
// attributes to the spec.
func (p *parallel) completedObject(c xfer.Completed, gone bool, size int64, crc uint32) *wire.Object {
	u := p.Request
	o := proto.Clone(u.Spec().GetResource()).(*wire.Object)
	o.Name, o.Bucket, o.Size = u.Object, u.Resource(), size
	o.Checksums = &wire.ObjectChecksums{Crc32C: &crc}
	if c.HasCRC {
		o.Checksums.Crc32C = &c.CRC32C
	}
	if c.Size >= 0 && !gone {
		o.Size = c.Size
	}
	o.Generation, o.Metageneration = c.Gen, c.Metagen
	if gone || c.Gen == 0 {
		if live := p.liveWritten(size, crc); live != nil {
			return live
		}
	}
	return o
}

// abort abandons the upload, retried in u's context (or, once it ended, in
// one of its own bounded by outcomeGrace). A NotFound after an attempt of
// its own whose answer was lost is no error, and either reports it: that
// attempt aborted the upload, or something else had ended it (a complete
// whose answer was lost).
func (p *parallel) abort(u *xfer.Request) (either bool, err error) {
	lu, r, done := settling(p.Services, u, p.Engine.Config())
	defer done()
	lost := false
	err = do(r, &lu.Target, xfer.MultipartNames.Abort, true, nil, func() (string, bool, error) {
		err := p.mp.xml.Abort(lu, p.mp.id, r.AttemptTimeout())
		switch {
		case err != nil && lost && status.Code(err) == codes.NotFound:
			either, err = true, nil
		case err != nil && retry.AnswerLost(err):
			lost = true
		}
		return "", true, err
	})
	var oe *xfer.OpError
	if errors.As(err, &oe) && oe.Code == codes.OK {
		return either, oe.Err
	}
	return either, err
}

// closeMultipart is Close of a multipart upload: it waits for the parts,
// and aborts the upload unless it completed, in the background, bounded by
// cleanupTimeout, and sweeps the empty uploads a lost initiate left.
func (p *parallel) closeMultipart() {
	p.cancel()
	h, m := &p.Params, p.mp
	w := h.Request
	base := w.Detached(context.WithoutCancel(w.Ctx))
	done := make(chan struct{})
	h.Services.Background(func() {
		defer close(done)
		p.wait()
		<-p.allDone
		if p.cur != nil {
			for _, r := range p.cur.refs {
				r.Unref()
			}
			p.cur = nil
		}
		ctx, cancel := context.WithTimeout(base.Ctx, cleanupTimeout)
		defer cancel()
		u := base.Detached(ctx)
		if m.id != "" && !m.completed {
			if _, err := p.abort(u); err != nil && status.Code(err) != codes.NotFound {
				p.leftBehind("multipart upload "+m.id, err)
			} else if l := h.Logger; l != nil {
				l.LogAttrs(ctx, slog.LevelDebug, "objup: aborted a multipart upload", slog.String("upload", m.id))
			}
		}
		if m.lostInit {
			p.sweep(u)
		}
		p.life.Wait()
	})
	select {
	case <-done:
	case <-w.Ctx.Done():
	}
}

// sweep aborts the uploads of the object that hold no part and began
// while the initiate was being retried (from its first attempt to its
// answer, with a second of slack for the clocks): a lost initiate's. Another
// writer's upload of the same name begun in that window and still empty
// would be aborted too; its next part then fails with NotFound.
func (p *parallel) sweep(u *xfer.Request) {
	m := p.mp
	cfg := p.Engine.Config()
	r := new(retry.Engine)
	r.Init(cfg, p.Services.NewEvents(&u.Target, nil))
	var ids []string
	err := do(r, &u.Target, xfer.MultipartNames.Uploads, true, nil, func() (string, bool, error) {
		var err error
		ids, err = m.xml.ListUploads(u, m.since.Add(-time.Second), m.answered.Add(time.Second), r.AttemptTimeout())
		return "", true, err
	})
	if err != nil {
		p.leftBehind("the uploads a lost initiate may have begun", err)
		return
	}
	for _, id := range ids {
		if id == m.id {
			continue
		}
		parts, err := m.xml.ListParts(u, id, r.AttemptTimeout())
		if err != nil || len(parts) > 0 {
			continue
		}
		if err := m.xml.Abort(u, id, r.AttemptTimeout()); err != nil && status.Code(err) != codes.NotFound {
			p.leftBehind("multipart upload "+id, err)
		}
	}
}

// errTooManyParts is the failure of an object that needs more parts than
// the XML API takes.
var errTooManyParts = status.Error(codes.InvalidArgument, fmt.Sprintf("the object needs more than %d parts: give WithParallelUpload a larger PartSize", maxMultipartParts))

// noteUpload notes in c what names the upload: a multipart upload's id, or
// the temporary objects' prefix and id.
func (p *parallel) noteUpload(c *xfer.Checkpoint) {
	c.PartSize = p.partSize
	if p.mp != nil {
		c.UploadID = p.mp.id
		return
	}
	c.Prefix, c.ID = p.cfg.TempPrefix, p.id
}
