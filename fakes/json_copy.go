package fakes

import (
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
	for _, n := range []string{srcName, dstName} {
		if err := api.CheckObjectName(n); err != nil {
			return err
		}
	}
	q := r.URL.Query()
	srcGen, err := queryInt(q, "sourceGeneration")
	if err != nil {
		return err
	}
	srcCond, err := sourceConditions(q)
	if err != nil {
		return err
	}
	dstCond, err := queryConditions(q)
	if err != nil {
		return err
	}
	tok := rewriteToken{SrcBucket: srcBkt, SrcObject: srcName, DstBucket: dstBkt, DstObject: dstName}
	var step int64
	if rewrite {
		if t := q.Get("rewriteToken"); t != "" {
			got, err := parseRewriteToken(t, tok)
			if err != nil {
				return err
			}
			if srcGen != 0 && srcGen != got.SrcGen {
				return store.Errorf(store.KindInvalid, "sourceGeneration %d is not the generation the rewrite reads, %d", srcGen, got.SrcGen)
			}
			tok, srcGen = got, got.SrcGen
		}
		if step, err = queryInt(q, "maxBytesRewrittenPerCall"); err != nil {
			return err
		}
		if step < 0 || step%rewriteStep != 0 {
			return store.Errorf(store.KindInvalid, "maxBytesRewrittenPerCall %d is not a multiple of %d", step, rewriteStep)
		}
	}
	var meta objectMetadata
	if err := json.NewDecoder(io.LimitReader(r.Body, maxMetadataBody)).Decode(&meta); err != nil && !errors.Is(err, io.EOF) {
		return store.Errorf(store.KindInvalid, "the request body is not a JSON object resource: %v", err)
	}
	srcB, err := s.store.Bucket(srcBkt)
	if err != nil {
		return err
	}
	o, err := srcB.Get(srcName, srcGen)
	if err != nil {
		return err
	}
	if err := srcCond.Check(o); err != nil {
		return err
	}
	if o.FinalizeTime() == 0 {
		return store.Errorf(store.KindInvalid, "object %q is not finalized: it cannot be copied", srcName)
	}
	dstB, err := s.store.Bucket(dstBkt)
	if err != nil {
		return err
	}
	live, _ := dstB.Get(dstName, 0)
	if err := dstCond.Check(live); err != nil {
		return err
	}
	if rewrite {
		tok.SrcGen = o.Generation()
		if step == 0 {
			step = o.Size()
		}
		tok.Done = min(tok.Done+step, o.Size())
		if tok.Done < o.Size() {
			writeJSON(w, http.StatusOK, &rewriteResponse{
				Kind: "storage#rewriteResponse", TotalBytesRewritten: strconv.FormatInt(tok.Done, 10),
				ObjectSize: strconv.FormatInt(o.Size(), 10), RewriteToken: tok.String(),
			})
			return nil
		}
	}
	a, err := copyAttrs(o, meta, dstB, q.Get("destinationPredefinedAcl"))
	if err != nil {
		return err
	}
	c := store.Content{Parts: o.Parts(), Size: o.Size(), CRC32C: o.CRC32C(), HasMD5: o.HasMD5()}
	copy(c.MD5[:], o.MD5())
	stored, err := dstB.Put(dstName, a, c, dstCond, lastValue(r.Header, header.TenantKey))
	if err != nil {
		return err
	}
	res := resource(dstB, stored, baseURL(r))
	if !rewrite {
		writeJSON(w, http.StatusOK, res)
		return nil
	}
	size := strconv.FormatInt(o.Size(), 10)
	writeJSON(w, http.StatusOK, &rewriteResponse{Kind: "storage#rewriteResponse", TotalBytesRewritten: size, ObjectSize: size, Done: true, Resource: res})
	return nil
}

// copyAttrs returns the attributes of the copy of o into bucket dst: o's,
// without its ACL, holds and retention, patched with meta, with meta's
// storage class or dst's, and the predefined ACL named predefined.
func copyAttrs(o *store.Object, meta objectMetadata, dst *store.Bucket, predefined string) (store.Attrs, error) {
	a := o.Attrs()
	a.Metadata = maps.Clone(a.Metadata)
	editExtra(&a, func(x *store.Extra) {
		x.ACL, x.TemporaryHold, x.EventBasedHold = nil, false, nil
		x.RetentionMode, x.RetainUntil = 0, 0
	})
	if err := meta.apply(&a, true); err != nil {
		return a, err
	}
	sc, present, _, err := meta.str("storageClass")
	if err != nil {
		return a, err
	}
	a.StorageClass = sc
	if !present || sc == "" {
		a.StorageClass = dst.Attrs().StorageClass
	}
	if len(a.Metadata) == 0 {
		a.Metadata = nil
	}
	return a, applyPredefinedACL(&a, predefined)
}
