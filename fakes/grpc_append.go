package fakes

import (
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/writes"
	"github.com/objup/objup/internal/wire"
)

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
