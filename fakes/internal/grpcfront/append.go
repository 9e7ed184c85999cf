package grpcfront

import (
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/calls"
	"github.com/objup/objup/fakes/internal/core"
	"github.com/objup/objup/fakes/internal/writes"
	"github.com/objup/objup/internal/wire"
)

// abandon ends the stream w's part in its appendable write, if it is still
// the object's writer: the bytes it sent that are not persisted are lost,
// as when a stream to the service breaks. A stream that half-closed or
// finished has none left.
func (w *writeStream) abandon() {
	up := w.up
	if up == nil || !up.Appendable {
		return
	}
	up.Mu.Lock()
	defer up.Mu.Unlock()
	if up.App.Abandon(w, true, &up.State) && up.Result == nil && !up.Gone {
		up.DropPending()
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
	up.Appendable, up.MD5, up.App.Epoch = true, nil, 1
	up.Mu.Lock()
	defer up.Mu.Unlock()
	if _, err := up.StoreAppendable(calls.TenantOf(w.ctx)); err != nil {
		return err
	}
	w.up, w.epoch, w.sendResource = up, up.App.Epoch, true
	up.App.Writer = w
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
	if err := core.CheckWrite(w.ctx); err != nil {
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
		if owner = b.AdoptAppendable(o.Name(), o.Generation(), core.RestoredAppendable(b, o, spec)); owner == nil {
			return status.Errorf(codes.NotFound, "appendable object %q generation %d is no longer the live object", o.Name(), o.Generation())
		}
	}
	switch {
	case !ok:
		return status.Errorf(codes.FailedPrecondition, "object %q generation %d is not an appendable object", o.Name(), o.Generation())
	case !o.Live():
		return status.Errorf(codes.FailedPrecondition, "object %q generation %d is noncurrent: only the live generation can be appended to", o.Name(), o.Generation())
	}
	up := owner.(*core.Upload)
	up.Mu.Lock()
	defer up.Mu.Unlock()
	if up.Gone {
		return up.ErrGone()
	}
	takeover, err := up.App.Reopen(w.ctx, w, spec, up.Result != nil, &up.State, func() error {
		return api.ReadConditions(nil, nil, spec.IfMetagenerationMatch, spec.IfMetagenerationNotMatch).Check(o)
	})
	if err != nil {
		return err
	}
	if up.Result == nil {
		up.DropPending() // the stream before loses what it did not persist
	}
	w.up, w.epoch, w.sendResource = up, up.App.Epoch, takeover
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
	up.Mu.Lock()
	resp := up.App.Response(w.epoch)
	up.Mu.Unlock()
	if first && w.sendResource {
		if o, err := up.Bucket.Get(up.Object, up.App.Gen); err == nil && o.Size() == resp.GetPersistedSize() {
			resp.WriteStatus, resp.PersistedDataChecksums = &wire.BidiWriteObjectResponse_Resource{Resource: core.ToObject(up.Bucket, o)}, nil
		}
	}
	return resp
}

// redirected ends the stream w of an appendable write under a
// RedirectAppend fault: the object's next stream must carry the token,
// and w fails with the redirect (its pending bytes are lost when the
// stream ends). up.mu is held.
func (w *writeStream) redirected() error {
	return w.up.App.Redirected(fmt.Sprintf("fakes: injected redirect of appendable object %q after %d bytes on the stream", w.up.Object, w.received), w.redir.Token)
}
