package fakes

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"

	"github.com/objup/objup/header"
	"github.com/objup/objup/internal/crc32c"
)

// maxComposeSources is the most source objects one compose takes, as on
// GCS.
const maxComposeSources = 32

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
			return 0, newError(kindInvalid, "%s %q is not an integer", what, s)
		}
		return n, nil
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, newError(kindInvalid, "%s %s is not an integer", what, raw)
	}
	return n, nil
}

// composeObject serves POST .../o/DESTINATION/compose: the destination,
// stored as one object, holds the sources' content one after the other.
// As on GCS: 1 to 32 sources of the destination's bucket, each at its live
// generation or the one named, with its own ifGenerationMatch; the
// destination's preconditions in the query; the destination's attributes
// from the request's destination resource; a CRC32C combined from the
// sources' (no content is read twice, and none is copied: the parts are
// shared), no MD5, and a component count that adds up the sources'.
func (s *Server) composeObject(w http.ResponseWriter, r *http.Request, bkt, name string) error {
	var req composeRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxMetadataBody)).Decode(&req); err != nil {
		return newError(kindInvalid, "the request body is not a compose request: %v", err)
	}
	n := len(req.SourceObjects)
	if n == 0 || n > maxComposeSources {
		return newError(kindInvalid, "a compose takes 1 to %d source objects, not %d", maxComposeSources, n)
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
	var parts [][]byte
	var size int64
	var crc uint32
	components := int64(0)
	for i, src := range req.SourceObjects {
		if src.Name == "" {
			return newError(kindInvalid, "source object %d has no name", i)
		}
		gen, err := jsonInt(src.Generation, "generation")
		if err != nil {
			return err
		}
		o, err := up.b.get(src.Name, gen)
		if err != nil {
			return err
		}
		if p := src.ObjectPreconditions; p != nil && len(p.IfGenerationMatch) > 0 {
			want, err := jsonInt(p.IfGenerationMatch, "ifGenerationMatch")
			if err != nil {
				return err
			}
			if o.generation != want {
				return newError(kindPrecondition, "source object %q: ifGenerationMatch %d, but the generation is %d", src.Name, want, o.generation)
			}
		}
		parts = append(parts, o.content...)
		crc = crc32c.Combine(crc, o.crc32c, o.size)
		size += o.size
		components += max(o.componentCount(), 1)
	}
	tmpl := *up.tmpl
	if tmpl.storageClass == "" {
		tmpl.storageClass = defaultStorageClass
	}
	tmpl.size, tmpl.crc32c, tmpl.content = size, crc, slices.Clip(parts)
	ex := objectExtra{}
	if tmpl.extra != nil {
		ex = *tmpl.extra
	}
	ex.components = components
	tmpl.extra = &ex
	stored, err := up.b.put(&tmpl, up.cond, lastValue(r.Header, header.TenantKey))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, up.b.resource(stored, baseURL(r)))
	return nil
}

// componentCount is the number of objects o was composed of, 0 for an
// object written at once.
func (o *object) componentCount() int64 {
	if o.extra == nil {
		return 0
	}
	return o.extra.components
}
