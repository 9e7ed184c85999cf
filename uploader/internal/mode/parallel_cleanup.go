package mode

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/objup/objup/uploader/internal/xfer"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// close ends a parallel upload, in the background: it stops the parts
// still uploading and waits for them (a part whose finishing request went
// out runs to its answer, see attemptCtx), releases their chunks and the
// part being filled, and deletes every temporary object that may exist,
// maxDeletes at a time, with a context of its own bounded by
// cleanupTimeout. The Writer waits for it while the upload's context
// lasts; Client.Close waits for it in any case.
func (p *parallel) Close() {
	if p.mp != nil {
		p.closeMultipart()
		return
	}
	p.cancel()
	h := &p.Params
	tr, cfg, w := p.tr, h.Engine.Config(), h.Request
	base := w.Detached(context.WithoutCancel(w.Ctx))
	done := make(chan struct{})
	h.Services.Background(func() {
		defer close(done)
		p.wait() // starts the wait, if no one did
		<-p.allDone
		if p.cur != nil {
			for _, r := range p.cur.refs {
				r.Unref()
			}
			p.cur = nil
		}
		ctx, cancel := context.WithTimeout(base.Ctx, cleanupTimeout)
		defer cancel()
		// A part whose session's outcome is unknown is settled now, with
		// the cleanup's time: cancelled, or its object found.
		var sg errgroup.Group
		sg.SetLimit(maxDeletes)
		for _, pt := range p.parts {
			if pt.session != "" {
				sg.Go(func() error {
					p.settlePart(ctx, pt)
					return nil
				})
			}
		}
		_ = sg.Wait()
		var doomed []xfer.Source
		for _, pt := range p.parts {
			if pt.gen != 0 || pt.sent {
				doomed = append(doomed, xfer.Source{Name: pt.Object, Gen: pt.gen})
			}
		}
		doomed = append(doomed, p.temps...)
		del := func(d xfer.Source) {
			u := &part{}
			u.Target = xfer.Target{Ctx: ctx, Bucket: base.Bucket, Object: d.Name, Params: base.Params}
			u.ev = h.Services.NewEvents(&u.Target, h.Events.Span())
			u.retry.Init(cfg, u.ev)
			err := do(&u.retry, &u.Target, tr.Names().Delete, true, nil, func() (string, bool, error) {
				err := tr.DeleteObject(&u.Request, d.Name, d.Gen, u.retry.AttemptTimeout())
				u.NoteRefusal(err)
				if err != nil && xfer.CodeOf(err) == codes.NotFound {
					err = nil
				}
				return "", true, err
			})
			if err != nil {
				p.leftBehind(d.Name, err)
			} else if l := h.Logger; l != nil {
				l.LogAttrs(ctx, slog.LevelDebug, "objup: deleted a temporary object", slog.String("temporary", d.Name), slog.Int64("generation", d.Gen))
			}
		}
		var g errgroup.Group
		g.SetLimit(maxDeletes)
		for _, d := range doomed {
			g.Go(func() error { del(d); return nil })
		}
		_ = g.Wait()
		// A part whose last answer was lost may still be committing on the
		// service (it received the whole write before the connection
		// broke): its delete is repeated once, a moment later.
		var unknown []xfer.Source
		for _, d := range doomed {
			if d.Gen == 0 {
				unknown = append(unknown, d)
			}
		}
		if len(unknown) > 0 {
			t := time.NewTimer(resweepAfter)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
			for _, d := range unknown {
				g.Go(func() error { del(d); return nil })
			}
			_ = g.Wait()
		}
		_ = g.Wait()
		p.life.Wait()
	})
	select {
	case <-done:
	case <-w.Ctx.Done():
	}
}

// leftBehind reports a temporary object that could not be deleted.
func (p *parallel) leftBehind(name string, err error) {
	h := &p.Params
	if s := h.Events.Span(); s != nil {
		s.AddEvent("temporary object left", trace.WithAttributes(attribute.String("object", name), attribute.String("error", err.Error())))
	}
	if l := h.Logger; l != nil {
		l.LogAttrs(context.WithoutCancel(h.Request.Ctx), slog.LevelWarn, "objup: could not delete a temporary object", h.Events.LogAttrs(slog.String("temporary", name), slog.Any("error", err))...)
	}
}

// settlePart settles the session of part pt, whose outcome was unknown
// when its upload ended, in ctx (the cleanup's), retried as the upload's
// retries are: the session's object, whose generation is then deleted, or
// a cancelled session, of which nothing is left to delete. A session that
// stays unknown leaves the part to a delete by name.
func (p *parallel) settlePart(ctx context.Context, pt *part) {
	h, w := &p.Params, p.Request
	u := &part{}
	u.Target = xfer.Target{Ctx: ctx, Bucket: w.Bucket, Object: pt.Object, Params: w.Params}
	u.ev = h.Services.NewEvents(&u.Target, h.Events.Span())
	u.retry.Init(h.Engine.Config(), u.ev)
	err := do(&u.retry, &u.Target, p.tr.Names().Query, true, nil, func() (string, bool, error) {
		o, known := settleSession(&u.Request, p.tr, pt.session, pt.size, u.retry.AttemptTimeout)
		switch {
		case o != nil:
			pt.gen = o.GetGeneration()
		case !known:
			return "", true, errUnsettled
		default:
			pt.sent = false
		}
		return "", true, nil
	})
	if err == nil {
		pt.session = ""
	}
}

// errUnsettled is the failure of a pass that could not settle a session:
// retried.
var errUnsettled = status.Error(codes.Unavailable, "the session's outcome is not settled yet")

// probeDelete checks, before the first part goes out, that the credential
// may delete the temporary objects: a delete of a name under the upload's
// prefix, which does not exist, is NotFound for a credential that may
// delete, PermissionDenied for one that may not (the service checks the
// permission first). Without it, a credential that may only create (an
// uploader's usual role) would find out after every part went out.
func (p *parallel) probeDelete() error {
	u := p.Request
	e := p.Engine
	err := do(e, &u.Target, p.tr.Names().Delete, true, nil, func() (string, bool, error) {
		err := p.tr.DeleteObject(u, p.prefix+"probe", 0, e.AttemptTimeout())
		u.NoteRefusal(err)
		if xfer.CodeOf(err) == codes.NotFound {
			err = nil
		}
		return "", true, err
	})
	if xfer.CodeOf(err) == codes.PermissionDenied {
		return &xfer.OpError{Op: p.tr.Names().Delete, Bucket: u.Bucket, Object: u.Object, Code: codes.PermissionDenied,
			Err: fmt.Errorf("a parallel composite upload deletes its temporary objects, and the credential may not (storage.objects.delete): take the XML API's multipart upload (ViaMultipart), which needs storage.objects.create only: %w", err)}
	}
	return err
}
