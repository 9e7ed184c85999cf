package fakes

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes/internal/api"
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
func (up *upload) storeAppendable(tenant string) (*store.Object, error) {
	stored, err := up.b.PutAppendable(up.object, up.attrs, up, up.cond, tenant)
	if err != nil {
		return nil, err
	}
	up.app.Name, up.app.Gen = up.object, stored.Generation()
	return stored, nil
}

// grow replaces the stored object of the appendable write up with a copy
// that holds the bytes up holds, finalized if final, and returns it: it
// persists every byte received. It fails with codes.NotFound once the
// object is no longer the live generation of its name, which ends the
// write: up is marked gone. up.mu is held.
func (up *upload) grow(final bool) (*store.Object, error) {
	c, ok := up.b.ReplaceAppendable(up.object, up.app.Gen, up, up.content(nil), final)
	if !ok {
		up.gone = true
		return nil, up.errGone()
	}
	up.app.Persist(&up.State)
	up.persistedN = len(up.chunks)
	if up.b.OnDisk() {
		// The bytes persisted are in the object's file: keep only those
		// to come (ReplaceAppendable takes the content's tail).
		clear(up.chunks)
		up.chunks, up.persistedN = up.chunks[:0], 0
	}
	return c, nil
}

// persist persists the bytes of the appendable write up that are pending,
// if any. up.mu is held.
func (up *upload) persist() error {
	if !up.app.Pending(&up.State) {
		return nil
	}
	_, err := up.grow(false)
	return err
}

// dropPending forgets the bytes of the appendable write up that are not
// persisted: the write goes on from the persisted size. up.mu is held.
func (up *upload) dropPending() {
	clear(up.chunks[up.persistedN:])
	up.chunks = up.chunks[:up.persistedN]
	up.app.Drop(&up.State)
}

// errGone is the error for a write to the appendable object of up once it
// is no longer the live generation of its name.
func (up *upload) errGone() error {
	return status.Errorf(codes.NotFound, "appendable object %q generation %d is no longer the live object", up.object, up.app.Gen)
}

// abandon ends the stream w's part in its appendable write, if it is still
// the object's writer: the bytes it sent that are not persisted are lost,
// as when a stream to the service breaks. A stream that half-closed or
// finished has none left.
func (w *writeStream) abandon() {
	up := w.up
	if up == nil || !up.appendable {
		return
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if up.app.Abandon(w, true, &up.State) && up.result == nil && !up.gone {
		up.dropPending()
	}
}

// finalizeAppendable verifies the declared checksums of the appendable
// write up and finalizes its object. A mismatch fails with
// codes.InvalidArgument, as the service answers, and leaves the object
// unfinalized, to be finalized by a later stream. The finalize waits
// the commit delay of c first; ctx is the request's (see commits.commit).
// up.mu is held.
func (up *upload) finalizeAppendable(ctx context.Context, c *commits) (*wire.Object, error) {
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
			if err := up.persist(); err != nil {
				return nil, err
			}
			return nil, status.Errorf(codes.InvalidArgument, "object CRC32C mismatch: sent %#08x, computed %#08x over %d bytes; the object stays unfinalized", *want.Crc32C, up.CRC, up.Size)
		}
	}
	if err := c.commit(ctx); err != nil {
		return nil, err
	}
	o, err := up.grow(true)
	if err != nil {
		return nil, err
	}
	up.stored, up.result, up.chunks = o, toObject(up.b, o), nil
	return up.result, nil
}

// openAppendable creates the appendable object of a stream's first
// message and makes the stream its writer.
func (w *writeStream) openAppendable(m *api.WriteMsg) error {
	if m.Sums != nil && !m.Finish {
		return writes.ErrAppendSums
	}
	up, err := w.s.newUpload(w.ctx, m.Spec, m.Common, w.method)
	if err != nil {
		return err
	}
	up.appendable, up.MD5, up.app.Epoch = true, nil, 1
	up.mu.Lock()
	defer up.mu.Unlock()
	if _, err := up.storeAppendable(tenantOf(w.ctx)); err != nil {
		return err
	}
	w.up, w.epoch, w.sendResource = up, up.app.Epoch, true
	up.app.Writer = w
	return nil
}

// openAppend opens the appendable object that an append_object_spec
// names: it resumes with the write handle it carries, or takes the object
// over without one (checking the spec's metageneration preconditions, as
// the service does only then).
func (w *writeStream) openAppend(m *api.WriteMsg) error {
	spec := m.AppendSpec
	if m.Sums != nil && !m.Finish {
		return writes.ErrAppendSums
	}
	if err := api.CheckCommon(m.Common); err != nil {
		return err
	}
	b, err := w.s.objectRef(w.ctx, spec.GetBucket(), spec.GetObject())
	if err != nil {
		return err
	}
	if err := checkWrite(w.ctx); err != nil {
		return err
	}
	o, err := b.Get(spec.GetObject(), spec.GetGeneration())
	if err != nil {
		return err
	}
	owner, ok := o.Appendable()
	if ok && owner == nil {
		// Stored before the server restarted (on disk): its writer state
		// is built again from the object.
		if owner = b.AdoptAppendable(o.Name(), o.Generation(), restoredAppendable(b, o, spec)); owner == nil {
			return status.Errorf(codes.NotFound, "appendable object %q generation %d is no longer the live object", o.Name(), o.Generation())
		}
	}
	switch {
	case !ok:
		return status.Errorf(codes.FailedPrecondition, "object %q generation %d is not an appendable object", o.Name(), o.Generation())
	case !o.Live():
		return status.Errorf(codes.FailedPrecondition, "object %q generation %d is noncurrent: only the live generation can be appended to", o.Name(), o.Generation())
	}
	up := owner.(*upload)
	up.mu.Lock()
	defer up.mu.Unlock()
	if up.gone {
		return up.errGone()
	}
	takeover, err := up.app.Reopen(w.ctx, w, spec, up.result != nil, &up.State, func() error {
		return api.ReadConditions(nil, nil, spec.IfMetagenerationMatch, spec.IfMetagenerationNotMatch).Check(o)
	})
	if err != nil {
		return err
	}
	if up.result == nil {
		up.dropPending() // the stream before loses what it did not persist
	}
	w.up, w.epoch, w.sendResource = up, up.app.Epoch, takeover
	return nil
}

// restoredAppendable returns the writer state of the appendable object o,
// stored before the server restarted: the bytes persisted are o's, the
// epoch that of the write handle of spec if it names o (the epoch is not
// kept across restarts), and o's result if it is finalized.
func restoredAppendable(b *store.Bucket, o *store.Object, spec *wire.AppendObjectSpec) *upload {
	up := newUpload(b, o.Name(), o.Attrs(), nil, nil)
	up.appendable, up.MD5 = true, nil
	up.app.Name, up.app.Gen, up.app.Epoch = o.Name(), o.Generation(), 1
	if gen, epoch, ok := writes.ParseHandle(spec.GetWriteHandle().GetHandle()); ok && gen == o.Generation() {
		up.app.Epoch = epoch
	}
	up.Size, up.CRC = o.Size(), o.CRC32C()
	up.app.Persist(&up.State)
	if o.FinalizeTime() != 0 {
		up.stored, up.result = o, toObject(b, o)
	}
	return up
}

// appendResponse is the response of an appendable write that has not
// finalized: after its first message, the object (with the bytes persisted
// so far) if the stream created or took it over, else the persisted size;
// after a later state_lookup, or the half-close, the persisted size. The
// persisted size comes with the CRC32C of the persisted bytes, and every
// response with the writer's handle.
func (w *writeStream) appendResponse(first bool) *wire.BidiWriteObjectResponse {
	up := w.up
	up.mu.Lock()
	resp := up.app.Response(w.epoch)
	up.mu.Unlock()
	if first && w.sendResource {
		if o, err := up.b.Get(up.object, up.app.Gen); err == nil && o.Size() == resp.GetPersistedSize() {
			resp.WriteStatus, resp.PersistedDataChecksums = &wire.BidiWriteObjectResponse_Resource{Resource: toObject(up.b, o)}, nil
		}
	}
	return resp
}

// redirected ends the stream w of an appendable write under a
// RedirectAppend fault: the object's next stream must carry the token,
// and w fails with the redirect (its pending bytes are lost when the
// stream ends). up.mu is held.
func (w *writeStream) redirected() error {
	return w.up.app.Redirected(fmt.Sprintf("fakes: injected redirect of appendable object %q after %d bytes on the stream", w.up.object, w.received), w.redir.token)
}
