package uploader

import (
	"context"
	"fmt"
	"io"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/uploader/internal/xfer"
)

// An appendable object's resume: a takeover checked against the handle,
// and the checkpoints of its flushes.

// resumeAppendable continues an appendable object: a takeover of its
// generation, after the source was checked against the handle and against
// the service's checksum of what the object holds.
func (c *Client) resumeAppendable(ctx context.Context, h *Handle, src io.ReaderAt, opts []WriterOption, j *Journal) (*ObjectAttrs, error) {
	const op = "Resume"
	if err := checkPrefix(op, h, src); err != nil {
		return nil, err
	}
	w, persisted, err := c.TakeOver(ctx, h.Bucket, h.Object, h.Generation, opts...)
	if err != nil {
		if CodeOf(err) == codes.FailedPrecondition {
			// Finalized already, or another generation: the object says.
			if o, gerr := c.getObject(ctx, h.Bucket, h.Object); gerr == nil && o.GetGeneration() == h.Generation && o.GetFinalizeTime() != nil {
				attrs, err := finishedAlready(op, h, o, src)
				if err == nil && j != nil {
					// An earlier Writer finalized it, and was stopped
					// before it removed the entry.
					_ = j.Remove(h.Bucket, h.Object)
				}
				return attrs, err
			}
		}
		return nil, err
	}
	crc, n, err := checksumRange(src, 0, persisted)
	a := w.req.App
	a.Mu.Lock()
	svc, hasCRC := a.CRC, a.HasCRC
	a.Mu.Unlock()
	switch {
	case err != nil:
		err = invalid(op, h.Bucket, h.Object, "reading the source: %w", err)
	case persisted < h.Persisted:
		err = &Error{Op: op, Bucket: h.Bucket, Object: h.Object, Code: codes.DataLoss,
			Err: fmt.Errorf("the object holds %d bytes, the handle says %d", persisted, h.Persisted)}
	case n < persisted:
		err = sourceChanged(op, h, "the source holds %d bytes, the object %d", n, persisted)
	case hasCRC && crc != svc:
		err = sourceChanged(op, h, "the object's %d bytes have CRC32C %08x, the source's first %d %08x", persisted, svc, persisted, crc)
	}
	if err != nil {
		// Nothing was written: the object stays as it was.
		_ = w.CloseWithError(err)
		return nil, err
	}
	if !hasCRC {
		// The service gave no checksum of what it holds: the source's,
		// whose first bytes matched the handle, makes the object's.
		w.cfg.knob.NoCRC32C = false
		if err := w.ch.Reset(w.ch.ChunkSize(), chunker.Continuing(persisted, crc)); err != nil {
			panic(err)
		}
	}
	if err := w.flushed(persisted); err != nil {
		_ = w.CloseWithError(err)
		return nil, err
	}
	return w.finishFrom(src, persisted)
}

// flushed notes in the upload's checkpoint that the service persisted n
// bytes of an appendable object, all that was written.
func (w *Writer) flushed(n int64) error {
	if n != w.ch.Size() || w.cfg.knob.NoCRC32C {
		return nil
	}
	a := w.req.App
	a.Mu.Lock()
	gen := a.Gen
	a.Mu.Unlock()
	crc := w.ch.CRC32C()
	return w.checkpoints().Update(func(c *xfer.Checkpoint) { c.Gen, c.Persisted, c.CRC32C = gen, n, crc }, true)
}
