package httpfront

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/objup/objup/fakes/internal/core"
	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/header"
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
	Destination core.ObjectMetadata `json:"destination"`
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
		req.Destination = core.ObjectMetadata{}
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
		gen, err := core.JSONInt(src.Generation, "generation")
		if err != nil {
			return err
		}
		srcs[i] = store.Source{Name: src.Name, Gen: gen}
		if p := src.ObjectPreconditions; p != nil && len(p.IfGenerationMatch) > 0 {
			want, err := core.JSONInt(p.IfGenerationMatch, "ifGenerationMatch")
			if err != nil {
				return err
			}
			srcs[i].IfMatch = &want
		}
	}
	if err := s.Commits.Commit(r.Context()); err != nil {
		return err
	}
	stored, err := up.Bucket.Compose(up.Object, up.Attrs, srcs, up.Cond, lastValue(r.Header, header.TenantKey))
	if err != nil {
		return err
	}
	WriteJSON(w, http.StatusOK, resource(up.Bucket, stored, baseURL(r)))
	return nil
}
