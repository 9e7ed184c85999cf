package fakes

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"

	"github.com/objup/objup/header"
	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/internal/wire"
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

// composeSource is one source object of a compose: its name, its
// generation (0: the live one) and its ifGenerationMatch, if any.
type composeSource struct {
	name    string
	gen     int64
	ifMatch *int64
}

// compose stores, as name in bucket b with the attributes of tmpl and the
// destination's preconditions cond, the sources' content one after the
// other, as GCS does: 1 to 32 sources of the bucket, each at its live
// generation or the one named and with its own ifGenerationMatch; a CRC32C
// combined from the sources' (no content is read again, and none is
// copied: the parts are shared); no MD5; a component count that adds up
// the sources'.
func (b *bucket) compose(tmpl *object, srcs []composeSource, cond *conditions, tenant string) (*object, error) {
	if n := len(srcs); n == 0 || n > maxComposeSources {
		return nil, newError(kindInvalid, "a compose takes 1 to %d source objects, not %d", maxComposeSources, n)
	}
	var parts [][]byte
	var size, components int64
	var crc uint32
	for i, src := range srcs {
		if src.name == "" {
			return nil, newError(kindInvalid, "source object %d has no name", i)
		}
		o, err := b.get(src.name, src.gen)
		if err != nil {
			return nil, err
		}
		if src.ifMatch != nil && o.generation != *src.ifMatch {
			return nil, newError(kindPrecondition, "source object %q: ifGenerationMatch %d, but the generation is %d", src.name, *src.ifMatch, o.generation)
		}
		parts = append(parts, o.content...)
		crc = crc32c.Combine(crc, o.crc32c, o.size)
		size += o.size
		components += max(o.componentCount(), 1)
	}
	c := *tmpl
	if c.storageClass == "" {
		c.storageClass = defaultStorageClass
	}
	c.size, c.crc32c, c.content = size, crc, slices.Clip(parts)
	ex := objectExtra{}
	if c.extra != nil {
		ex = *c.extra
	}
	ex.components = components
	c.extra = &ex
	return b.put(&c, cond, tenant)
}

// composeObject serves objects.compose, POST .../o/DESTINATION/compose:
// the body names the sources and the destination's attributes, the query
// the destination's preconditions.
func (s *Server) composeObject(w http.ResponseWriter, r *http.Request, bkt, name string) error {
	var req composeRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxMetadataBody)).Decode(&req); err != nil {
		return newError(kindInvalid, "the request body is not a compose request: %v", err)
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
	srcs := make([]composeSource, len(req.SourceObjects))
	for i, src := range req.SourceObjects {
		gen, err := jsonInt(src.Generation, "generation")
		if err != nil {
			return err
		}
		srcs[i] = composeSource{name: src.Name, gen: gen}
		if p := src.ObjectPreconditions; p != nil && len(p.IfGenerationMatch) > 0 {
			want, err := jsonInt(p.IfGenerationMatch, "ifGenerationMatch")
			if err != nil {
				return err
			}
			srcs[i].ifMatch = &want
		}
	}
	stored, err := up.b.compose(up.tmpl, srcs, up.cond, lastValue(r.Header, header.TenantKey))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, up.b.resource(stored, baseURL(r)))
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
	if err := checkCommon(req.GetCommonObjectRequestParams()); err != nil {
		return nil, err
	}
	tmpl := specTemplate(&wire.WriteObjectSpec{Resource: dst})
	srcs := make([]composeSource, len(req.GetSourceObjects()))
	for i, src := range req.GetSourceObjects() {
		srcs[i] = composeSource{name: src.GetName(), gen: src.GetGeneration()}
		if p := src.GetObjectPreconditions(); p != nil && p.IfGenerationMatch != nil {
			m := p.GetIfGenerationMatch()
			srcs[i].ifMatch = &m
		}
	}
	cond := readConditions(req.IfGenerationMatch, nil, req.IfMetagenerationMatch, nil)
	stored, err := b.compose(tmpl, srcs, cond, tenantOf(ctx))
	if err != nil {
		return nil, err
	}
	return b.toObject(stored), nil
}

// componentCount is the number of objects o was composed of, 0 for an
// object written at once.
func (o *object) componentCount() int64 {
	if o.extra == nil {
		return 0
	}
	return o.extra.components
}
