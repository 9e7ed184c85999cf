package core

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/fakes/internal/writes"
	"github.com/objup/objup/internal/wire"
)

// Appendable objects, as BidiWriteObject writes them.
//
// A stream whose write_object_spec sets appendable stores the object at
// once, empty and unfinalized, as the live generation of its name (the
// spec's preconditions are checked then). The bytes a stream sends are
// pending until a message with flush (or finish_write) persists
// everything received so far: the stored object is then replaced by a
// copy of itself with the new size, CRC32C and content, under the
// bucket's lock, so readers see the bytes persisted, and only those. A
// clean half-close persists what was sent too; a stream that ends any
// other way (the client cancels, the connection drops, a fault or a
// redirect aborts it) loses its pending bytes, so the persisted size can
// lag what was sent. finish_write finalizes. An appendable object has no
// MD5, finalized or not.
//
// The object's writer state is its upload, which the stored object points
// to as its owner. A stream whose append_object_spec names the object
// continues it: without a write handle it takes the object over, which
// fences the writer before it (its next message fails with
// codes.FailedPrecondition); with the handle a response gave, it resumes as
// the same writer, and the stream that wrote before is fenced as well.
// Either way the pending bytes of the stream before are dropped and the
// new stream writes from the persisted size: data that overlaps bytes
// already persisted is dropped, as the service does.
//
// A RedirectAppend fault aborts a stream with a redirect once it has
// received the bytes the fault names: the stream's pending bytes are
// lost, and the next stream that reopens the object must carry the
// redirect's routing token (else it is redirected again).

// storeAppendable stores the empty, unfinalized object of the appendable
// write up, if up's preconditions hold, and returns it. up.mu is held.
func (up *Upload) StoreAppendable(tenant string) (*store.Object, error) {
	stored, err := up.Bucket.PutAppendable(up.Object, up.Attrs, up, up.Cond, tenant)
	if err != nil {
		return nil, err
	}
	up.App.Name, up.App.Gen = up.Object, stored.Generation()
	return stored, nil
}

// grow replaces the stored object of the appendable write up with a copy
// that holds the bytes up holds, finalized if final, and returns it: it
// persists every byte received. It fails with codes.NotFound once the
// object is no longer the live generation of its name, which ends the
// write: up is marked gone. up.mu is held.
func (up *Upload) grow(final bool) (*store.Object, error) {
	c, ok := up.Bucket.ReplaceAppendable(up.Object, up.App.Gen, up, up.content(nil), final)
	if !ok {
		up.Gone = true
		return nil, up.ErrGone()
	}
	up.App.Persist(&up.State)
	up.persistedN = len(up.chunks)
	if up.Bucket.OnDisk() {
		// The bytes persisted are in the object's file: keep only those
		// to come (ReplaceAppendable takes the content's tail).
		clear(up.chunks)
		up.chunks, up.persistedN = up.chunks[:0], 0
	}
	return c, nil
}

// persist persists the bytes of the appendable write up that are pending,
// if any. up.mu is held.
func (up *Upload) Persist() error {
	if !up.App.Pending(&up.State) {
		return nil
	}
	_, err := up.grow(false)
	return err
}

// dropPending forgets the bytes of the appendable write up that are not
// persisted: the write goes on from the persisted size. up.mu is held.
func (up *Upload) DropPending() {
	clear(up.chunks[up.persistedN:])
	up.chunks = up.chunks[:up.persistedN]
	up.App.Drop(&up.State)
}

// errGone is the error for a write to the appendable object of up once it
// is no longer the live generation of its name.
func (up *Upload) ErrGone() error {
	return status.Errorf(codes.NotFound, "appendable object %q generation %d is no longer the live object", up.Object, up.App.Gen)
}

// finalizeAppendable verifies the declared checksums of the appendable
// write up and finalizes its object. A mismatch fails with
// codes.InvalidArgument, as the service answers, and leaves the object
// unfinalized, to be finalized by a later stream. The finalize waits
// the commit delay of c first; ctx is the request's (see commits.commit).
// up.mu is held.
func (up *Upload) FinalizeAppendable(ctx context.Context, c *Commits) (*wire.Object, error) {
	want := up.Sums
	up.Sums = nil // they applied to this finish_write only
	if err := up.CheckSize(); err != nil {
		return nil, err
	}
	if want != nil {
		if len(want.Md5Hash) > 0 {
			return nil, status.Error(codes.InvalidArgument, "object_checksums.md5_hash: appendable objects have no MD5")
		}
		if want.Crc32C != nil && *want.Crc32C != up.CRC {
			// finish_write persists what was sent, even when it
			// cannot finalize.
			if err := up.Persist(); err != nil {
				return nil, err
			}
			return nil, status.Errorf(codes.InvalidArgument, "object CRC32C mismatch: sent %#08x, computed %#08x over %d bytes; the object stays unfinalized", *want.Crc32C, up.CRC, up.Size)
		}
	}
	if err := c.Commit(ctx); err != nil {
		return nil, err
	}
	o, err := up.grow(true)
	if err != nil {
		return nil, err
	}
	up.Stored, up.Result, up.chunks = o, ToObject(up.Bucket, o), nil
	return up.Result, nil
}

// restoredAppendable returns the writer state of the appendable object o,
// stored before the server restarted: the bytes persisted are o's, the
// epoch that of the write handle of spec if it names o (the epoch is not
// kept across restarts), and o's result if it is finalized.
func RestoredAppendable(b *store.Bucket, o *store.Object, spec *wire.AppendObjectSpec) *Upload {
	up := NewUpload(b, o.Name(), o.Attrs(), nil, nil)
	up.Appendable, up.MD5 = true, nil
	up.App.Name, up.App.Gen, up.App.Epoch = o.Name(), o.Generation(), 1
	if gen, epoch, ok := writes.ParseHandle(spec.GetWriteHandle().GetHandle()); ok && gen == o.Generation() {
		up.App.Epoch = epoch
	}
	up.Size, up.CRC = o.Size(), o.CRC32C()
	up.App.Persist(&up.State)
	if o.FinalizeTime() != 0 {
		up.Stored, up.Result = o, ToObject(b, o)
	}
	return up
}
