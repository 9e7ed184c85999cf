package mode

import (
	"strconv"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/uploader/internal/xfer"

	"golang.org/x/sync/errgroup"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/internal/wire"
)

// finish uploads the last part, waits for every part and composes them
// into the object; last is the data after the parts handed out so far.
func (p *parallel) Finish(last chunker.Chunk) (*wire.Object, error) {
	h := &p.Params
	u := h.Request
	if len(last.Data) > 0 {
		if err := p.Push(last); err != nil {
			return nil, err
		}
	} else {
		u.Life.PutBuffer(last.Buf)
	}
	if p.cur != nil && len(p.cur.refs) > 0 {
		if err := p.dispatch(); err != nil {
			return nil, err
		}
	}
	if err := p.wait(); err != nil {
		return nil, err
	}
	if p.mp != nil {
		return p.complete()
	}
	srcs := make([]xfer.Source, len(p.parts))
	for i, pt := range p.parts {
		srcs[i] = xfer.Source{Name: pt.Object, Gen: pt.gen}
	}
	for round := 0; len(srcs) > maxComposeSources; round++ {
		next, err := p.composeRound(round, srcs)
		if err != nil {
			return nil, err
		}
		srcs = next
	}
	if p.cfg.Exact && u.Scratch.Spec.IfGenerationMatch == nil {
		if err := p.matchLive(); err != nil {
			return nil, err
		}
	}
	// A later process that finds Composing and no object composes again,
	// under the same precondition.
	match := u.Scratch.Spec.IfGenerationMatch
	if err := h.Checkpoints.Update(func(c *xfer.Checkpoint) {
		c.Composing = true
		if match != nil {
			c.ComposeMatch, c.HasMatch = *match, true
		}
	}, true); err != nil {
		return nil, &xfer.OpError{Op: p.tr.Names().Compose, Bucket: u.Bucket, Object: u.Object, Code: xfer.CodeOf(err), Err: err}
	}
	var o *wire.Object
	names := p.tr.Names()
	var cr creation
	e := h.Engine
	err := do(e, &u.Target, names.Compose, u.Idempotent(), nil, func() (string, bool, error) {
		var err error
		o, err = p.tr.ComposeObject(u, srcs, e.AttemptTimeout())
		u.NoteRefusal(err)
		o, err = cr.judge(o, true, err)
		return "", true, err
	})
	if err != nil {
		return settled(u, p.tr, &cr, err)
	}
	// A later process that finds the upload's checkpoint deletes the
	// parts and takes this object, rather than composing it again.
	gen := o.GetGeneration()
	_ = h.Checkpoints.Update(func(c *xfer.Checkpoint) { c.Gen = gen }, true)
	return o, nil
}

// matchLive makes the compose replace only the object's live generation
// (ifGenerationMatch: 0 when there is none).
func (p *parallel) matchLive() error {
	u := p.Request
	e := p.Engine
	var gen int64
	err := do(e, &u.Target, p.tr.Names().Query, true, nil, func() (string, bool, error) {
		o, err := p.tr.GetObject(u, u.Object, e.AttemptTimeout())
		if xfer.CodeOf(err) == codes.NotFound {
			o, err = nil, nil
		}
		gen = o.GetGeneration()
		return "GetObject", true, err
	})
	if err != nil {
		return err
	}
	u.Scratch.Spec.IfGenerationMatch = &gen
	return nil
}

// composeRound joins srcs 32 at a time into temporary objects, all at
// once, and returns those.
func (p *parallel) composeRound(round int, srcs []xfer.Source) ([]xfer.Source, error) {
	n := (len(srcs) + maxComposeSources - 1) / maxComposeSources
	next := make([]xfer.Source, n)
	us := make([]*part, n)
	for i := range us {
		us[i] = p.newPart(0)
		// The parts' context ended with them; a compose runs in the
		// upload's.
		us[i].Ctx = p.Request.Ctx
		us[i].Object = p.prefix + "compose-" + strconv.Itoa(round) + "-" + strconv.Itoa(i)
		initSpec(&us[i].Request, p.Request)
		// Once its request may have left, an intermediate compose runs
		// to its answer (see attemptCtx), so that the cleanup finds what
		// it made.
		us[i].Scratch.Settle = true
		next[i].Name = us[i].Object
	}
	var g errgroup.Group
	for i, u := range us {
		group := srcs[i*maxComposeSources : min((i+1)*maxComposeSources, len(srcs))]
		g.Go(func() error {
			var o *wire.Object
			err := do(&u.retry, &u.Target, p.tr.Names().Compose, true, nil, func() (string, bool, error) {
				var err error
				o, err = p.tr.ComposeObject(&u.Request, group, u.retry.AttemptTimeout())
				u.NoteRefusal(err)
				return "", true, err
			})
			next[i].Gen = o.GetGeneration()
			return err
		})
	}
	err := g.Wait()
	// An intermediate whose compose may have run is deleted with the
	// parts; one that surely did not exist is not found, which is fine.
	p.temps = append(p.temps, next...)
	return next, err
}
