package uploader

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/mode"
	"github.com/objup/objup/uploader/internal/xfer"
)

// probes is how many look-ups and deletes of temporary objects a resume
// or a discard runs at once.
const probes = 16

// resumeParallel continues a parallel composite upload: the parts the
// service holds with the source's bytes are reused, the other temporary
// objects deleted, and the upload runs again over the whole source,
// sending only the parts it does not reuse.
func (w *Writer) resumeParallel(h *Handle, src io.ReaderAt) (*ObjectAttrs, error) {
	const op = "Resume"
	c := w.client()
	ctx := w.req.Ctx
	fail := func(err error) (*ObjectAttrs, error) {
		w.fail(op, err)
		w.closed = true
		w.end()
		return nil, w.err
	}
	for _, p := range h.Parts {
		if p.Generation == 0 {
			continue
		}
		crc, n, err := checksumRange(src, p.Offset, p.Size)
		switch {
		case err != nil:
			return fail(invalid(op, h.Bucket, h.Object, "reading the source: %w", err))
		case n != p.Size || crc != p.CRC32C:
			return fail(sourceChanged(op, h, "part %d, %d bytes from offset %d, has CRC32C %08x in the handle, %08x in the source", p.Index, p.Size, p.Offset, p.CRC32C, crc))
		}
	}
	prefix := h.TempPrefix + h.ID + "/"
	if h.Generation != 0 {
		// The last compose made the object: what is left is the cleanup.
		o, err := c.getObject(ctx, h.Bucket, h.Object)
		c.deleteTemps(ctx, h)
		if w.cfg.journal() != nil {
			_ = w.cfg.journal().Remove(h.Bucket, h.Object)
		}
		if err == nil && o.GetGeneration() != h.Generation {
			err = &Error{Op: op, Bucket: h.Bucket, Object: h.Object, Code: codes.FailedPrecondition,
				Err: fmt.Errorf("the upload made generation %d, the live object is generation %d", h.Generation, o.GetGeneration())}
		}
		if err != nil {
			return fail(err)
		}
		w.closed = true
		w.end()
		return finishedAlready(op, h, o, src)
	}
	if h.Composing {
		// The last compose went out and its answer was lost with the
		// Writer: a composite object of the source's bytes is that
		// compose's (or one of the same bytes), and the upload is done;
		// else the parts are composed again, under the same
		// precondition, so that only one of the two composes stores.
		if attrs, ok := c.composedEarlier(ctx, h, src); ok {
			if w.cfg.journal() != nil {
				_ = w.cfg.journal().Remove(h.Bucket, h.Object)
			}
			w.closed = true
			w.end()
			return attrs, nil
		}
	}
	reuse, err := c.storedParts(ctx, h, prefix, src)
	if err != nil {
		return fail(err)
	}
	c.deleteComposes(ctx, h, prefix)
	if err := w.takeSpec(op, h); err != nil {
		return fail(err)
	}
	if h.HasComposeMatch && w.req.Scratch.Spec.IfGenerationMatch == nil {
		// The compose that may have gone out had this precondition: the
		// one made again takes it too, so only one of them stores.
		match := h.ComposeMatch
		w.req.Scratch.Spec.IfGenerationMatch = &match
	}
	parts := 0
	if w.cfg.parallel != nil {
		parts = w.cfg.parallel.Parts
	}
	// A compose of an earlier Writer may still land: the handle keeps
	// saying so until this Writer's own compose answers.
	w.cfg.parallel = &mode.Parallel{PartSize: h.PartSize, Parts: parts, TempPrefix: h.TempPrefix, ID: h.ID, Stored: reuse,
		Composing: h.Composing, ComposeMatch: h.ComposeMatch, HasMatch: h.HasComposeMatch}
	attrs, err := w.finishFrom(src, 0)
	if err != nil && h.Composing && CodeOf(err) == codes.FailedPrecondition {
		// The compose that went out before stored first.
		if a, ok := c.composedEarlier(ctx, h, src); ok {
			return a, nil
		}
	}
	return attrs, err
}

// composedEarlier returns the object of h's upload if the service holds
// a composite object of the source's bytes (the compose that went out
// before, or one of the same bytes), and deletes the upload's temporary
// objects then.
func (c *Client) composedEarlier(ctx context.Context, h *Handle, src io.ReaderAt) (*ObjectAttrs, bool) {
	o, err := c.getObject(ctx, h.Bucket, h.Object)
	if err != nil || o.GetComponentCount() == 0 {
		return nil, false
	}
	attrs, err := finishedAlready("Resume", h, o, src)
	if err != nil {
		return nil, false
	}
	_ = c.deleteTemps(ctx, h)
	return attrs, true
}

// storedParts returns the parts of h's upload that the service holds with
// the source's bytes, and deletes those it holds with other bytes (a part
// the source does not make again, at another offset).
func (c *Client) storedParts(ctx context.Context, h *Handle, prefix string, src io.ReaderAt) ([]xfer.StoredPart, error) {
	var mu sync.Mutex
	var reuse []xfer.StoredPart
	var g errgroup.Group
	g.SetLimit(probes)
	for _, p := range h.Parts {
		g.Go(func() error {
			name := prefix + "part-" + strconv.Itoa(p.Index)
			if p.Generation == 0 && p.Session != "" {
				// A message of the part's session may still be on its
				// way: once cancelled, the session stores nothing more.
				// (One the service finished or forgot is not cancelled:
				// the look-up below finds its object, or nothing.)
				_ = c.cancelSession(ctx, h.Bucket, name, p.Session)
			}
			o, err := c.getObject(ctx, h.Bucket, name)
			switch {
			case CodeOf(err) == codes.NotFound:
				return nil
			case err != nil:
				return err
			}
			crc, n, err := checksumRange(src, p.Offset, o.GetSize())
			if err != nil {
				return invalid("Resume", h.Bucket, h.Object, "reading the source: %w", err)
			}
			if cs := o.GetChecksums(); n == o.GetSize() && o.GetSize() == p.Size && cs != nil && cs.Crc32C != nil && cs.GetCrc32C() == crc {
				mu.Lock()
				reuse = append(reuse, xfer.StoredPart{Index: p.Index, Offset: p.Offset, Size: p.Size, CRC32C: crc, Gen: o.GetGeneration()})
				mu.Unlock()
				return nil
			}
			return c.deleteObject(ctx, h.Bucket, name, o.GetGeneration())
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return reuse, nil
}

// deleteObject deletes generation gen of gs://bucket/name (0: the live
// one); one that does not exist is fine.
func (c *Client) deleteObject(ctx context.Context, bucket, name string, gen int64) error {
	u, r := c.call(ctx, bucket, name)
	op, err := r.Do(ctx, "DeleteObject", true, nil, func() (string, bool, error) {
		err := c.tr.DeleteObject(u, name, gen, r.AttemptTimeout())
		u.NoteRefusal(err)
		if CodeOf(err) == codes.NotFound {
			err = nil
		}
		return "", true, err
	})
	if err != nil {
		return newError(op, bucket, name, err)
	}
	return nil
}

// deleteComposes deletes the objects of intermediate composes that h's
// upload may have made (prefix + "compose-R-N"), round by round, until a
// name is not found.
func (c *Client) deleteComposes(ctx context.Context, h *Handle, prefix string) {
	for round := 0; ; round++ {
		i := 0
		for ; ; i++ {
			name := prefix + "compose-" + strconv.Itoa(round) + "-" + strconv.Itoa(i)
			o, err := c.getObject(ctx, h.Bucket, name)
			if err != nil {
				break
			}
			_ = c.deleteObject(ctx, h.Bucket, name, o.GetGeneration())
		}
		if i == 0 {
			return
		}
	}
}

// deleteTemps deletes every temporary object of h's parallel upload.
func (c *Client) deleteTemps(ctx context.Context, h *Handle) error {
	prefix := h.TempPrefix + h.ID + "/"
	var g errgroup.Group
	g.SetLimit(probes)
	for _, p := range h.Parts {
		g.Go(func() error { return c.deleteObject(ctx, h.Bucket, prefix+"part-"+strconv.Itoa(p.Index), 0) })
	}
	err := g.Wait()
	c.deleteComposes(ctx, h, prefix)
	return err
}

// Discard abandons the upload h names, so that nothing of it is stored
// later and nothing of it is left: a resumable session is cancelled (one
// the service no longer knows is fine), a parallel upload's temporary
// objects are deleted, and an appendable object's generation, left
// unfinalized, is deleted. It removes no journal entry (Journal.Remove
// does). A session the service already finished is a FailedPrecondition
// error for gRPC: the object stays.
func (c *Client) Discard(ctx context.Context, h Handle) error {
	const op = "Discard"
	if err := c.checkHandle(&h); err != nil {
		return invalid(op, h.Bucket, h.Object, "%w", err)
	}
	if err := c.checkCall(op, ctx, h.Bucket, h.Object); err != nil {
		return err
	}
	switch h.Kind {
	case KindParallel:
		return c.deleteTemps(ctx, &h)
	case KindMultipart:
		return c.abortMultipart(ctx, &h)
	case KindAppendable:
		return c.deleteObject(ctx, h.Bucket, h.Object, h.Generation)
	}
	return c.cancelSession(ctx, h.Bucket, h.Object, h.Session)
}

// cancelSession cancels session id of gs://bucket/object; one the service
// no longer knows is fine.
func (c *Client) cancelSession(ctx context.Context, bucket, object, id string) error {
	u, r := c.call(ctx, bucket, object)
	op, err := r.Do(ctx, "CancelResumableWrite", true, nil, func() (string, bool, error) {
		err := c.tr.CancelUpload(u, id, r.AttemptTimeout())
		if CodeOf(err) == codes.NotFound {
			// Gone already: nothing of it can be stored.
			err = nil
		}
		return "", true, err
	})
	if err != nil {
		return newError(op, bucket, object, err)
	}
	return nil
}

// takeSpec gives the Writer the object's spec that h's upload began with
// (its attributes and conditions), which a parallel upload's compose or
// complete applies.
func (w *Writer) takeSpec(op string, h *Handle) error {
	if len(h.Spec) == 0 {
		return nil
	}
	var s wire.WriteObjectSpec
	if err := proto.Unmarshal(h.Spec, &s); err != nil {
		return invalid(op, h.Bucket, h.Object, "the handle's spec: %w", err)
	}
	if s.Resource != nil {
		proto.Merge(&w.req.Scratch.Object, s.Resource)
		s.Resource = nil
	}
	proto.Merge(&w.req.Scratch.Spec, &s)
	return nil
}
