package uploader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/mode"
	"github.com/objup/objup/uploader/internal/names"
	"github.com/objup/objup/uploader/internal/xfer"
)

// errSourceChanged is the cause of a resume whose source is not the one
// the handle was taken of.
var errSourceChanged = errors.New("the source changed since the upload began")

// IsSourceChanged reports whether err is the failure of a Client.Resume
// whose source does not hold the bytes the handle says were sent: nothing
// of it was sent, and the upload the handle names is left as it was (see
// Client.Discard). It also holds when the service had already finished the
// upload with other bytes than the source's.
func IsSourceChanged(err error) bool { return errors.Is(err, errSourceChanged) }

// WithJournal keeps the upload's handle (see Writer.Handle) in j while it
// runs, so that a later process can continue it with Client.Resume after
// this one was killed: see Journal. A Writer that uploads its object in
// one call writes nothing to the journal. An upload whose outcome is
// unknown (IsOutcomeUnknown) keeps its entry, for a later Resume to
// settle with the service; a caller that settles it otherwise (for
// example from a failed DoesNotExist precondition and the object's
// CRC32C) removes the entry with Journal.Remove.
func WithJournal(j *Journal) WriterOption {
	return writerOptionFunc(func(c *writerConfig) {
		cp := c.tracking()
		cp.journal, cp.nilJournal = j, j == nil
	})
}

// tracking returns the checkpoints, made if there are none yet; options
// call it, before the upload starts.
func (c *writerConfig) tracking() *checkpoints {
	cp := c.cps.Load()
	if cp == nil {
		cp = new(checkpoints)
		c.cps.Store(cp)
	}
	return cp
}

// progress returns WithProgress's, or nil.
func (c *writerConfig) progress() *mode.Progress {
	if cp := c.cps.Load(); cp != nil {
		return cp.progress
	}
	return nil
}

// journal returns the Writer's journal, or nil.
func (c *writerConfig) journal() *Journal {
	if cp := c.cps.Load(); cp != nil {
		return cp.journal
	}
	return nil
}

// checkJournal checks WithJournal.
func (c *writerConfig) checkJournal() error {
	switch {
	case c.cps.Load() == nil:
		return nil
	case c.cps.Load().nilJournal:
		return errors.New("WithJournal: nil journal")
	case c.cps.Load().journal == nil:
		return nil
	case c.knob.NoCRC32C:
		return errors.New("WithJournal needs the CRC32C that WithoutCRC32C turns off: a resume checks the source with it")
	}
	return nil
}

// Resume continues the upload that h names (see Writer.Handle and
// Journal) from src, the same source the upload began with, read from
// offset 0 until io.EOF: a file, or any io.ReaderAt. It returns the
// stored object's attributes, as Upload does.
//
// Before a byte goes out, Resume reads the bytes the handle says the
// service holds and checks their CRC32C against the handle's: a source
// that changed is an error for which IsSourceChanged holds. It then asks
// the service (the session's status, the parts, the appendable object),
// whose answer, not the handle, says where the upload goes on, and sends
// the rest: the bytes sent again are at most those the service had not
// acknowledged when the earlier Writer stopped. The object's CRC32C, of
// the whole source, is checked by the service when it finishes the
// upload, as for any upload.
//
//   - A session the service already finished returns its object when its
//     size and CRC32C are the source's (the earlier Writer's finish went
//     out, its answer did not come back), else an IsSourceChanged error.
//   - A session the service no longer knows (a session ends a week after it
//     began, or when cancelled) is a NotFound error that matches
//     fs.ErrNotExist: start the upload again.
//   - A parallel upload reuses each part the service stored whose bytes
//     are the source's, deletes the temporary objects it does not reuse,
//     and sends the other parts; WithParallelUpload may set Parts (how
//     many go at once), its other fields come from the handle.
//   - An appendable object is taken over (see TakeOver) and finalized
//     unless WithoutFinalize.
//
// opts are those of NewWriter that a resume can honour: the object's
// attributes and preconditions were fixed when the upload began, so
// WithAttrs, WithConditions, WithSendMD5, WithSendCRC32C and WithAppendable
// are InvalidArgument errors. WithJournal keeps the handle in a journal
// again (the entry is removed once the upload ended). A resumed Writer
// checks the handle and the options before anything is sent.
func (c *Client) Resume(ctx context.Context, h Handle, src io.ReaderAt, opts ...WriterOption) (*ObjectAttrs, error) {
	const op = "Resume"
	if err := c.checkHandle(&h); err != nil {
		return nil, invalid(op, h.Bucket, h.Object, "%w", err)
	}
	if src == nil {
		return nil, invalid(op, h.Bucket, h.Object, "nil source")
	}
	if ctx != nil && (h.Kind == KindParallel || h.Kind == KindMultipart) && h.ChunkSize > 0 {
		opts = append([]WriterOption{WithChunkSize(h.ChunkSize)}, opts...)
	}
	w := new(Writer)
	if err := w.init(c, ctx, h.Bucket, h.Object, opts); err != nil {
		return nil, err
	}
	if err := w.resumeOptions(&h); err != nil {
		w.closed = true
		w.end()
		return nil, invalid(op, h.Bucket, h.Object, "%w", err)
	}
	switch h.Kind {
	case KindAppendable:
		j := w.cfg.journal()
		w.closed = true
		w.end() // TakeOver makes the Writer
		return c.resumeAppendable(ctx, &h, src, opts, j)
	case KindParallel:
		return w.resumeParallel(&h, src)
	case KindMultipart:
		return w.resumeMultipart(&h, src)
	}
	return w.resumeSession(&h, src)
}

// checkHandle checks a handle before it is used.
func (c *Client) checkHandle(h *Handle) error {
	switch {
	case h.Version != handleVersion:
		return fmt.Errorf("handle format version %d, want %d", h.Version, handleVersion)
	case h.Kind != KindResumable && h.Kind != KindParallel && h.Kind != KindAppendable && h.Kind != KindMultipart:
		return fmt.Errorf("handle of unknown kind %q", h.Kind)
	case h.Kind == KindMultipart:
		if err := checkMultipartHandle(h); err != nil {
			return err
		}
	case h.API != apiName(c.grpc()):
		return fmt.Errorf("the handle's upload began on the %s API, this client uploads over the %s API", h.API, apiName(c.grpc()))
	case h.Persisted < 0:
		return fmt.Errorf("handle with %d bytes persisted", h.Persisted)
	case h.Kind == KindResumable && h.Session == "":
		return errors.New("resumable handle without a session")
	case h.Kind == KindAppendable && h.Generation <= 0:
		return errors.New("appendable handle without a generation")
	case h.Kind == KindParallel && (h.ID == "" || h.PartSize <= 0):
		return errors.New("parallel handle without its temporary objects' id and part size")
	}
	if err := names.Bucket(h.Bucket); err != nil {
		return err
	}
	return names.Object(h.Object)
}

// resumeOptions refuses the options a resume cannot honour.
func (w *Writer) resumeOptions(h *Handle) error {
	cfg := &w.cfg
	s := &w.req.Scratch.Spec
	o := s.Resource
	switch {
	case cfg.knob.MD5 || cfg.sendMD5 != nil:
		return errors.New("a resume cannot compute or take an MD5 of the whole object")
	case cfg.hasCRC:
		return errors.New("a resume computes the object's CRC32C from the source: WithSendCRC32C is not taken")
	case cfg.appending && h.Kind != KindAppendable:
		return errors.New("WithAppendable: the handle's upload is not an appendable object")
	case cfg.resumable:
		return errors.New("WithResumable: a resume continues the handle's upload as it is")
	case cfg.parallel != nil && h.Kind != KindParallel && h.Kind != KindMultipart:
		return errors.New("WithParallelUpload: the handle's upload is not a parallel upload")
	case cfg.parallel != nil && cfg.parallel.PartSize != 0 && cfg.parallel.PartSize != h.PartSize:
		return fmt.Errorf("WithParallelUpload: the handle's parts are of %d bytes", h.PartSize)
	case s.IfGenerationMatch != nil || s.IfGenerationNotMatch != nil || s.IfMetagenerationMatch != nil || s.IfMetagenerationNotMatch != nil:
		return errors.New("a resume takes no preconditions: they were fixed when the upload began")
	case o.ContentType != "" || o.ContentEncoding != "" || o.ContentDisposition != "" || o.ContentLanguage != "" ||
		o.CacheControl != "" || o.StorageClass != "" || len(o.Metadata) > 0 || o.CustomTime != nil || o.KmsKey != "" ||
		len(o.Acl) > 0 || s.PredefinedAcl != "" || o.Retention != nil || o.TemporaryHold || o.EventBasedHold != nil || len(o.Contexts.GetCustom()) > 0:
		return errors.New("a resume cannot set the object's attributes: they were fixed when the upload began")
	}
	return nil
}

// sourceChanged is the failure of a resume whose source does not match.
func sourceChanged(op string, h *Handle, format string, args ...any) *Error {
	return &Error{Op: op, Bucket: h.Bucket, Object: h.Object, Code: codes.FailedPrecondition,
		Err: fmt.Errorf("%w: %s", errSourceChanged, fmt.Sprintf(format, args...))}
}

// checksumRange returns the CRC32C of n bytes of src from off on, and how
// many it read (fewer at the source's end).
func checksumRange(src io.ReaderAt, off, n int64) (uint32, int64, error) {
	buf := make([]byte, min(n, 1<<20))
	var crc uint32
	var done int64
	for done < n {
		k, err := src.ReadAt(buf[:min(int64(len(buf)), n-done)], off+done)
		if k > 0 {
			crc = crc32c.Combine(crc, crc32c.Checksum(buf[:k]), int64(k))
			done += int64(k)
		}
		if errors.Is(err, io.EOF) {
			return crc, done, nil
		}
		if err != nil {
			return crc, done, err
		}
	}
	return crc, done, nil
}

// checkPrefix checks that src holds the bytes h says the service holds,
// and returns their CRC32C.
func checkPrefix(op string, h *Handle, src io.ReaderAt) error {
	crc, n, err := checksumRange(src, 0, h.Persisted)
	switch {
	case err != nil:
		return &Error{Op: op, Bucket: h.Bucket, Object: h.Object, Code: codes.InvalidArgument, Err: fmt.Errorf("reading the source: %w", err)}
	case n < h.Persisted:
		return sourceChanged(op, h, "the source holds %d bytes, the service holds %d of it", n, h.Persisted)
	case crc != h.CRC32C:
		return sourceChanged(op, h, "its first %d bytes have CRC32C %08x, the handle says %08x", n, crc, h.CRC32C)
	}
	return nil
}

// rest returns src from off on.
func rest(src io.ReaderAt, off int64) io.Reader {
	return io.NewSectionReader(src, off, math.MaxInt64-off)
}

// finishedAlready returns the attributes of o, an object the service
// finished from the upload h names, if it holds src's bytes.
func finishedAlready(op string, h *Handle, o *wire.Object, src io.ReaderAt) (*ObjectAttrs, error) {
	crc, n, err := checksumRange(src, 0, math.MaxInt64)
	if err != nil {
		return nil, &Error{Op: op, Bucket: h.Bucket, Object: h.Object, Code: codes.InvalidArgument, Err: fmt.Errorf("reading the source: %w", err)}
	}
	cs := o.GetChecksums()
	if o.GetSize() != n || cs == nil || cs.Crc32C == nil || cs.GetCrc32C() != crc {
		return nil, sourceChanged(op, h, "the service finished the upload as generation %d of %d bytes (CRC32C %08x); the source has %d bytes (CRC32C %08x)",
			o.GetGeneration(), o.GetSize(), cs.GetCrc32C(), n, crc)
	}
	a := new(ObjectAttrs)
	a.setFromObject(o)
	return a, nil
}

// resumeSession continues a resumable session.
func (w *Writer) resumeSession(h *Handle, src io.ReaderAt) (*ObjectAttrs, error) {
	const op = "Resume"
	if err := checkPrefix(op, h, src); err != nil {
		w.closed = true
		w.end()
		return nil, err
	}
	tr := w.client().tr
	var persisted int64
	var o *wire.Object
	op2, err := w.retry.Do(w.req.Ctx, tr.Names().Query, true, nil, func() (string, bool, error) {
		var err error
		persisted, o, err = tr.QueryStatus(&w.req, h.Session, xfer.NoRoute, -1, w.retry.AttemptTimeout())
		return "", true, err
	})
	var attrs *ObjectAttrs
	switch {
	case err != nil && xfer.CodeOf(err) == codes.NotFound:
		err = &Error{Op: op2, Bucket: h.Bucket, Object: h.Object, Code: codes.NotFound,
			Err: fmt.Errorf("the upload's session is gone (a session ends a week after it began, or when cancelled): start the upload again: %w", err)}
	case err != nil:
		err = xfer.Fail(&w.req.Target, op2, err)
	case o != nil:
		attrs, err = finishedAlready(op, h, o, src)
	case persisted < h.Persisted:
		err = &Error{Op: op2, Bucket: h.Bucket, Object: h.Object, Code: codes.DataLoss,
			Err: fmt.Errorf("the service holds %d bytes of the session, the handle says %d", persisted, h.Persisted)}
	}
	if err != nil || attrs != nil {
		w.fail(op, err)
		w.closed = true
		w.end()
		if w.cfg.journal() != nil && (attrs != nil || CodeOf(err) == codes.NotFound || IsSourceChanged(err) && o != nil) {
			_ = w.cfg.journal().Remove(h.Bucket, h.Object)
		}
		if attrs != nil {
			w.err = nil
			return attrs, nil
		}
		return nil, w.err
	}
	crc, _, err := checksumRange(src, h.Persisted, persisted-h.Persisted)
	if err != nil {
		w.fail(op, invalid(op, h.Bucket, h.Object, "reading the source: %w", err))
		w.closed = true
		w.end()
		return nil, w.err
	}
	crc = crc32c.Combine(h.CRC32C, crc, persisted-h.Persisted)
	if err := w.ch.Reset(w.ch.ChunkSize(), chunker.Continuing(persisted, crc)); err != nil {
		panic(err) // the size was accepted by init
	}
	w.mode = mode.NewResumedSession(w.params(), mode.Resume{Session: h.Session, Persisted: persisted, CRC32C: crc})
	attrs, err = w.finishFrom(src, persisted)
	if CodeOf(err) == codes.DataLoss && persisted > h.Persisted {
		// The service's CRC32C of the object is not the source's: the
		// bytes it persisted after the handle was written are not the
		// source's. It stored nothing, and the session cannot end
		// otherwise: it is cancelled, and the journal forgets it.
		_ = w.client().cancelSession(context.WithoutCancel(w.req.Ctx), h.Bucket, h.Object, h.Session)
		if j := w.cfg.journal(); j != nil {
			_ = j.Remove(h.Bucket, h.Object)
		}
		return nil, sourceChanged(op, h, "the service holds %d bytes of the session, %d more than the handle says, and they are not the source's: %v", persisted, persisted-h.Persisted, err)
	}
	return attrs, err
}

// finishFrom writes src from off on and closes the Writer.
func (w *Writer) finishFrom(src io.ReaderAt, off int64) (*ObjectAttrs, error) {
	if _, err := w.ReadFrom(rest(src, off)); err != nil {
		_ = w.CloseWithError(err)
		return nil, w.err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return w.Attrs(), nil
}
