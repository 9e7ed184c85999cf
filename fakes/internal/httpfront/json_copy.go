package httpfront

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/objup/objup/fakes/internal/core"
	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/header"
)

// objects.copy and objects.rewrite: the destination shares the source's
// content (no byte is copied, as compose), with its CRC32C and MD5.

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
	req := &core.CopyRequest{SrcBucket: srcBkt, SrcName: srcName, DstBucket: dstBkt, DstName: dstName,
		Rewrite: rewrite, Predefined: q.Get("destinationPredefinedAcl"), Tenant: lastValue(r.Header, header.TenantKey), Ctx: r.Context()}
	if req.SrcGen, err = queryInt(q, "sourceGeneration"); err != nil {
		return err
	}
	if req.SrcCond, err = sourceConditions(q); err != nil {
		return err
	}
	if req.DstCond, err = queryConditions(q); err != nil {
		return err
	}
	if rewrite {
		req.Token = q.Get("rewriteToken")
		if req.Step, err = queryInt(q, "maxBytesRewrittenPerCall"); err != nil {
			return err
		}
	}
	var meta core.ObjectMetadata
	if err := json.NewDecoder(io.LimitReader(r.Body, maxMetadataBody)).Decode(&meta); err != nil && !errors.Is(err, io.EOF) {
		return store.Errorf(store.KindInvalid, "the request body is not a JSON object resource: %v", err)
	}
	req.Edit = func(a *store.Attrs, dst *store.Bucket) error {
		if err := meta.Apply(a, true); err != nil {
			return err
		}
		sc, present, _, err := meta.Str("storageClass")
		if err != nil {
			return err
		}
		a.StorageClass = sc
		if !present || sc == "" {
			a.StorageClass = dst.Attrs().StorageClass
		}
		return nil
	}
	res, err := s.Copy(req)
	if err != nil {
		return err
	}
	if !rewrite {
		WriteJSON(w, http.StatusOK, resource(res.Bucket, res.Stored, baseURL(r)))
		return nil
	}
	out := &rewriteResponse{
		Kind: "storage#rewriteResponse", TotalBytesRewritten: strconv.FormatInt(res.Done, 10),
		ObjectSize: strconv.FormatInt(res.Size, 10), Done: res.Stored != nil, RewriteToken: res.Token,
	}
	if res.Stored != nil {
		out.Resource = resource(res.Bucket, res.Stored, baseURL(r))
	}
	WriteJSON(w, http.StatusOK, out)
	return nil
}
