package grpcfront

import (
	"context"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/calls"
	"github.com/objup/objup/fakes/internal/core"
	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/internal/wire"
)

// ComposeObject implements storage v2's compose: the destination resource
// names the bucket and the object, and gives its attributes.
func (v *Service) ComposeObject(ctx context.Context, req *wire.ComposeObjectRequest) (*wire.Object, error) {
	dst := req.GetDestination()
	b, err := v.S.objectRef(ctx, dst.GetBucket(), dst.GetName())
	if err != nil {
		return nil, err
	}
	if err := v.S.admitGRPC(ctx, b.Name(), dst.GetName()); err != nil {
		return nil, err
	}
	if err := api.CheckCommon(req.GetCommonObjectRequestParams()); err != nil {
		return nil, err
	}
	a := specAttrs(&wire.WriteObjectSpec{Resource: dst})
	srcs := make([]store.Source, len(req.GetSourceObjects()))
	for i, src := range req.GetSourceObjects() {
		srcs[i] = store.Source{Name: src.GetName(), Gen: src.GetGeneration()}
		if p := src.GetObjectPreconditions(); p != nil && p.IfGenerationMatch != nil {
			m := p.GetIfGenerationMatch()
			srcs[i].IfMatch = &m
		}
	}
	cond := core.OverwriteCond(ctx, api.ReadConditions(req.IfGenerationMatch, nil, req.IfMetagenerationMatch, nil))
	if err := v.S.Commits.Commit(ctx); err != nil {
		return nil, err
	}
	stored, err := b.Compose(dst.GetName(), a, srcs, cond, calls.TenantOf(ctx))
	if err != nil {
		return nil, err
	}
	return core.ToObject(b, stored), nil
}
