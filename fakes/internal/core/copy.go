package core

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"maps"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/store"
)

// rewriteStep is the unit of maxBytesRewrittenPerCall, as GCS requires it.
const rewriteStep = 1 << 20

// rewriteToken is the state of a rewrite between its calls, which the
// token a call answers with carries (so that the server keeps none): the
// source and destination it is for, the source generation it reads and
// the bytes rewritten so far.
type rewriteToken struct {
	SrcBucket string `json:"sb"`
	SrcObject string `json:"so"`
	SrcGen    int64  `json:"sg"`
	DstBucket string `json:"db"`
	DstObject string `json:"do"`
	Done      int64  `json:"n"`
}

func (t *rewriteToken) String() string {
	b, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(b)
}

// parseRewriteToken reads a token this server made, for the rewrite want
// (whose SrcGen and Done are not looked at).
func parseRewriteToken(s string, want rewriteToken) (rewriteToken, error) {
	var t rewriteToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &t)
	}
	if err != nil || t.SrcBucket != want.SrcBucket || t.SrcObject != want.SrcObject ||
		t.DstBucket != want.DstBucket || t.DstObject != want.DstObject || t.Done <= 0 {
		return t, store.Errorf(store.KindInvalid, "rewriteToken %q is not one this server gave for this rewrite", s)
	}
	return t, nil
}

// copyRequest is a copy or a rewrite, as either API asks for it.
type CopyRequest struct {
	SrcBucket, SrcName string
	SrcGen             int64 // 0: the live object
	SrcCond, DstCond   *store.Conditions
	DstBucket, DstName string
	Rewrite            bool
	Token              string // the rewrite's token, "" on its first call
	Step               int64  // maxBytesRewrittenPerCall; 0: one call
	Predefined         string // destinationPredefinedAcl
	Tenant             string
	Ctx                context.Context // the request's, for its commit (commits.commit)
	// edit sets the destination's attributes from the request, once the
	// source's were copied; dst is the destination bucket.
	Edit func(a *store.Attrs, dst *store.Bucket) error
}

// copyResult is what one call of a copy or rewrite did: the object stored
// when it is done, else the token of the next call.
type copyResult struct {
	Bucket     *store.Bucket // the destination's
	Stored     *store.Object // nil until done
	Done, Size int64         // bytes rewritten so far, of size
	Token      string        // for the next call, if not done
}

// copy carries out one call of a copy or rewrite: see copyObject.
func (s *Core) Copy(req *CopyRequest) (*copyResult, error) {
	for _, n := range []string{req.SrcName, req.DstName} {
		if err := api.CheckObjectName(n); err != nil {
			return nil, err
		}
	}
	if req.Token == "" {
		if err := s.Admit(req.DstBucket, req.DstName, req.Tenant); err != nil {
			return nil, err
		}
	}
	tok := rewriteToken{SrcBucket: req.SrcBucket, SrcObject: req.SrcName, DstBucket: req.DstBucket, DstObject: req.DstName}
	srcGen, step := req.SrcGen, req.Step
	if req.Rewrite {
		if req.Token != "" {
			got, err := parseRewriteToken(req.Token, tok)
			if err != nil {
				return nil, err
			}
			if srcGen != 0 && srcGen != got.SrcGen {
				return nil, store.Errorf(store.KindInvalid, "sourceGeneration %d is not the generation the rewrite reads, %d", srcGen, got.SrcGen)
			}
			tok, srcGen = got, got.SrcGen
		}
		if step < 0 || step%rewriteStep != 0 {
			return nil, store.Errorf(store.KindInvalid, "maxBytesRewrittenPerCall %d is not a multiple of %d", step, rewriteStep)
		}
	}
	srcB, err := s.Store.Bucket(req.SrcBucket)
	if err != nil {
		return nil, err
	}
	o, err := srcB.Get(req.SrcName, srcGen)
	if err != nil {
		return nil, err
	}
	if err := req.SrcCond.Check(o); err != nil {
		return nil, err
	}
	if o.FinalizeTime() == 0 {
		return nil, store.Errorf(store.KindInvalid, "object %q is not finalized: it cannot be copied", req.SrcName)
	}
	dstB, err := s.Store.Bucket(req.DstBucket)
	if err != nil {
		return nil, err
	}
	live, _ := dstB.Get(req.DstName, 0)
	if err := req.DstCond.Check(live); err != nil {
		return nil, err
	}
	res := &copyResult{Bucket: dstB, Size: o.Size(), Done: o.Size()}
	if req.Rewrite {
		tok.SrcGen = o.Generation()
		if step == 0 {
			step = o.Size()
		}
		tok.Done = min(tok.Done+step, o.Size())
		if res.Done = tok.Done; tok.Done < o.Size() {
			res.Token = tok.String()
			return res, nil
		}
	}
	a := o.Attrs()
	a.Metadata = maps.Clone(a.Metadata)
	editExtra(&a, func(x *store.Extra) {
		x.ACL, x.TemporaryHold, x.EventBasedHold = nil, false, nil
		x.RetentionMode, x.RetainUntil = 0, 0
	})
	if err := req.Edit(&a, dstB); err != nil {
		return nil, err
	}
	if len(a.Metadata) == 0 {
		a.Metadata = nil
	}
	if err := ApplyPredefinedACL(&a, req.Predefined); err != nil {
		return nil, err
	}
	c := o.Content()
	if err := s.Commits.Commit(req.Ctx); err != nil {
		return nil, err
	}
	if res.Stored, err = dstB.Put(req.DstName, a, c, OverwriteCond(req.Ctx, req.DstCond), req.Tenant); err != nil {
		return nil, err
	}
	return res, nil
}
