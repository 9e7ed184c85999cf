package fakes

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/header"
)

// objects.copy and objects.rewrite: the destination shares the source's
// content (no byte is copied, as compose), with its CRC32C and MD5.

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

// rewriteResponse is the JSON API's answer to objects.rewrite.
type rewriteResponse struct {
	Kind                string          `json:"kind"`
	TotalBytesRewritten string          `json:"totalBytesRewritten"`
	ObjectSize          string          `json:"objectSize"`
	Done                bool            `json:"done"`
	RewriteToken        string          `json:"rewriteToken,omitempty"`
	Resource            *objectResource `json:"resource,omitempty"`
}

// copyDestination reads the escaped "b/BUCKET/o/OBJECT" after copyTo or
// rewriteTo.
func copyDestination(rest string) (bkt, name string, err error) {
	b, after, _ := strings.Cut(rest, "/")
	bkt, after, ok := segment(after)
	o, path, _ := strings.Cut(after, "/")
	if ok && b == "b" && o == "o" && bkt != "" {
		if name, err = url.PathUnescape(path); err == nil && name != "" {
			return bkt, name, nil
		}
	}
	return "", "", store.Errorf(store.KindInvalid, "the destination %q is not b/BUCKET/o/OBJECT", rest)
}

// sourceConditions reads the source preconditions of a copy or rewrite
// (ifSourceGenerationMatch, ...).
func sourceConditions(q url.Values) (*store.Conditions, error) {
	src := url.Values{}
	for _, k := range []string{"GenerationMatch", "GenerationNotMatch", "MetagenerationMatch", "MetagenerationNotMatch"} {
		if q.Has("ifSource" + k) {
			src.Set("if"+k, q.Get("ifSource"+k))
		}
	}
	return queryConditions(src)
}

// copyObject serves objects.copy and (rewrite) objects.rewrite, POST
// .../o/SOURCE/copyTo/b/BUCKET/o/OBJECT (rewriteTo): the source is the
// live object or sourceGeneration, under the ifSource* preconditions; the
// destination gets its content, its attributes (not its ACL, holds and
// retention) patched with the body's, and the storage class the body
// names or its bucket's, under the destination preconditions (and
// destinationPredefinedAcl). A rewrite with maxBytesRewrittenPerCall (a
// multiple of 1 MiB) goes in calls of that many bytes, each but the last
// answered with a rewriteToken for the next; without it, a rewrite
// completes in one call.
func (s *Server) copyObject(w http.ResponseWriter, r *http.Request, srcBkt, srcName, dst string, rewrite bool) error {
	dstBkt, dstName, err := copyDestination(dst)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	req := &copyRequest{srcBucket: srcBkt, srcName: srcName, dstBucket: dstBkt, dstName: dstName,
		rewrite: rewrite, predefined: q.Get("destinationPredefinedAcl"), tenant: lastValue(r.Header, header.TenantKey), ctx: r.Context()}
	if req.srcGen, err = queryInt(q, "sourceGeneration"); err != nil {
		return err
	}
	if req.srcCond, err = sourceConditions(q); err != nil {
		return err
	}
	if req.dstCond, err = queryConditions(q); err != nil {
		return err
	}
	if rewrite {
		req.token = q.Get("rewriteToken")
		if req.step, err = queryInt(q, "maxBytesRewrittenPerCall"); err != nil {
			return err
		}
	}
	var meta objectMetadata
	if err := json.NewDecoder(io.LimitReader(r.Body, maxMetadataBody)).Decode(&meta); err != nil && !errors.Is(err, io.EOF) {
		return store.Errorf(store.KindInvalid, "the request body is not a JSON object resource: %v", err)
	}
	req.edit = func(a *store.Attrs, dst *store.Bucket) error {
		if err := meta.apply(a, true); err != nil {
			return err
		}
		sc, present, _, err := meta.str("storageClass")
		if err != nil {
			return err
		}
		a.StorageClass = sc
		if !present || sc == "" {
			a.StorageClass = dst.Attrs().StorageClass
		}
		return nil
	}
	res, err := s.copy(req)
	if err != nil {
		return err
	}
	if !rewrite {
		writeJSON(w, http.StatusOK, resource(res.bucket, res.stored, baseURL(r)))
		return nil
	}
	out := &rewriteResponse{
		Kind: "storage#rewriteResponse", TotalBytesRewritten: strconv.FormatInt(res.done, 10),
		ObjectSize: strconv.FormatInt(res.size, 10), Done: res.stored != nil, RewriteToken: res.token,
	}
	if res.stored != nil {
		out.Resource = resource(res.bucket, res.stored, baseURL(r))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// copyRequest is a copy or a rewrite, as either API asks for it.
type copyRequest struct {
	srcBucket, srcName string
	srcGen             int64 // 0: the live object
	srcCond, dstCond   *store.Conditions
	dstBucket, dstName string
	rewrite            bool
	token              string // the rewrite's token, "" on its first call
	step               int64  // maxBytesRewrittenPerCall; 0: one call
	predefined         string // destinationPredefinedAcl
	tenant             string
	ctx                context.Context // the request's, for its commit (commits.commit)
	// edit sets the destination's attributes from the request, once the
	// source's were copied; dst is the destination bucket.
	edit func(a *store.Attrs, dst *store.Bucket) error
}

// copyResult is what one call of a copy or rewrite did: the object stored
// when it is done, else the token of the next call.
type copyResult struct {
	bucket     *store.Bucket // the destination's
	stored     *store.Object // nil until done
	done, size int64         // bytes rewritten so far, of size
	token      string        // for the next call, if not done
}

// copy carries out one call of a copy or rewrite: see copyObject.
func (s *Server) copy(req *copyRequest) (*copyResult, error) {
	for _, n := range []string{req.srcName, req.dstName} {
		if err := api.CheckObjectName(n); err != nil {
			return nil, err
		}
	}
	if req.token == "" {
		if err := s.admit(req.dstBucket, req.dstName, req.tenant); err != nil {
			return nil, err
		}
	}
	tok := rewriteToken{SrcBucket: req.srcBucket, SrcObject: req.srcName, DstBucket: req.dstBucket, DstObject: req.dstName}
	srcGen, step := req.srcGen, req.step
	if req.rewrite {
		if req.token != "" {
			got, err := parseRewriteToken(req.token, tok)
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
	srcB, err := s.store.Bucket(req.srcBucket)
	if err != nil {
		return nil, err
	}
	o, err := srcB.Get(req.srcName, srcGen)
	if err != nil {
		return nil, err
	}
	if err := req.srcCond.Check(o); err != nil {
		return nil, err
	}
	if o.FinalizeTime() == 0 {
		return nil, store.Errorf(store.KindInvalid, "object %q is not finalized: it cannot be copied", req.srcName)
	}
	dstB, err := s.store.Bucket(req.dstBucket)
	if err != nil {
		return nil, err
	}
	live, _ := dstB.Get(req.dstName, 0)
	if err := req.dstCond.Check(live); err != nil {
		return nil, err
	}
	res := &copyResult{bucket: dstB, size: o.Size(), done: o.Size()}
	if req.rewrite {
		tok.SrcGen = o.Generation()
		if step == 0 {
			step = o.Size()
		}
		tok.Done = min(tok.Done+step, o.Size())
		if res.done = tok.Done; tok.Done < o.Size() {
			res.token = tok.String()
			return res, nil
		}
	}
	a := o.Attrs()
	a.Metadata = maps.Clone(a.Metadata)
	editExtra(&a, func(x *store.Extra) {
		x.ACL, x.TemporaryHold, x.EventBasedHold = nil, false, nil
		x.RetentionMode, x.RetainUntil = 0, 0
	})
	if err := req.edit(&a, dstB); err != nil {
		return nil, err
	}
	if len(a.Metadata) == 0 {
		a.Metadata = nil
	}
	if err := applyPredefinedACL(&a, req.predefined); err != nil {
		return nil, err
	}
	c := o.Content()
	if err := s.commits.commit(req.ctx); err != nil {
		return nil, err
	}
	if res.stored, err = dstB.Put(req.dstName, a, c, overwriteCond(req.ctx, req.dstCond), req.tenant); err != nil {
		return nil, err
	}
	return res, nil
}
