package fakes

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/header"
	"github.com/objup/objup/internal/wire"
)

// composeRequest is the body of objects.compose.
type composeRequest struct {
	SourceObjects []struct {
		Name                string          `json:"name"`
		Generation          json.RawMessage `json:"generation"`
		ObjectPreconditions *struct {
			IfGenerationMatch json.RawMessage `json:"ifGenerationMatch"`
		} `json:"objectPreconditions"`
	} `json:"sourceObjects"`
	Destination objectMetadata `json:"destination"`
}

// jsonInt reads an int64 the JSON API sends as a string or a number; an
// absent one is 0.
func jsonInt(raw json.RawMessage, what string) (int64, error) {
	if len(raw) == 0 {
		return 0, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, store.Errorf(store.KindInvalid, "%s %q is not an integer", what, s)
		}
		return n, nil
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, store.Errorf(store.KindInvalid, "%s %s is not an integer", what, raw)
	}
	return n, nil
}

// composeObject serves objects.compose, POST .../o/DESTINATION/compose:
// the body names the sources and the destination's attributes, the query
// the destination's preconditions.
func (s *Server) composeObject(w http.ResponseWriter, r *http.Request, bkt, name string) error {
	if err := s.admitHTTP(r, bkt, name); err != nil {
		return err
	}
	var req composeRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxMetadataBody)).Decode(&req); err != nil {
		return store.Errorf(store.KindInvalid, "the request body is not a compose request: %v", err)
	}
	if req.Destination == nil {
		req.Destination = objectMetadata{}
	}
	q := r.URL.Query()
	q.Set("name", name)
	r.URL.RawQuery = q.Encode()
	up, err := s.newJSONUpload(r, bkt, req.Destination)
	if err != nil {
		return err
	}
	srcs := make([]store.Source, len(req.SourceObjects))
	for i, src := range req.SourceObjects {
		gen, err := jsonInt(src.Generation, "generation")
		if err != nil {
			return err
		}
		srcs[i] = store.Source{Name: src.Name, Gen: gen}
		if p := src.ObjectPreconditions; p != nil && len(p.IfGenerationMatch) > 0 {
			want, err := jsonInt(p.IfGenerationMatch, "ifGenerationMatch")
			if err != nil {
				return err
			}
			srcs[i].IfMatch = &want
		}
	}
	if err := s.commits.commit(r.Context()); err != nil {
		return err
	}
	stored, err := up.b.Compose(up.object, up.attrs, srcs, up.cond, lastValue(r.Header, header.TenantKey))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, resource(up.b, stored, baseURL(r)))
	return nil
}

// ComposeObject implements storage v2's compose: the destination resource
// names the bucket and the object, and gives its attributes.
func (v *service) ComposeObject(ctx context.Context, req *wire.ComposeObjectRequest) (*wire.Object, error) {
	dst := req.GetDestination()
	b, err := v.s.objectRef(ctx, dst.GetBucket(), dst.GetName())
	if err != nil {
		return nil, err
	}
	if err := v.s.admitGRPC(ctx, b.Name(), dst.GetName()); err != nil {
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
	cond := overwriteCond(ctx, api.ReadConditions(req.IfGenerationMatch, nil, req.IfMetagenerationMatch, nil))
	if err := v.s.commits.commit(ctx); err != nil {
		return nil, err
	}
	stored, err := b.Compose(dst.GetName(), a, srcs, cond, tenantOf(ctx))
	if err != nil {
		return nil, err
	}
	return toObject(b, stored), nil
}
