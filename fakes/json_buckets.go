package fakes

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/objup/objup/fakes/internal/store"
)

// listBuckets serves buckets.list. The fake has one project: every bucket
// is listed whatever project is named, but one must be, as GCS requires.
func (s *Server) listBuckets(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if q.Get("project") == "" {
		return store.Errorf(store.KindInvalid, "required parameter: project")
	}
	size, err := queryInt(q, "maxResults")
	switch {
	case err != nil:
		return err
	case size < 0:
		return store.Errorf(store.KindInvalid, "maxResults is %d", size)
	case size == 0 || size > maxPageSize:
		size = maxPageSize
	}
	after := ""
	if t := q.Get("pageToken"); t != "" {
		name, _, ok := store.ParsePageToken(t)
		if !ok {
			return store.Errorf(store.KindInvalid, "page token %q is not one this server issued", t)
		}
		after = name
	}
	bs, more := s.store.ListBuckets(q.Get("prefix"), after, int(size))
	out := &bucketList{Kind: "storage#buckets"}
	base := baseURL(r)
	for _, b := range bs {
		out.Items = append(out.Items, bucketJSON(b, base))
	}
	if more {
		out.NextPageToken = store.PageToken(bs[len(bs)-1].Name(), 0)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// insertBucket serves buckets.insert. Of the bucket resource it takes the
// name and versioning.enabled.
func (s *Server) insertBucket(w http.ResponseWriter, r *http.Request) error {
	if r.URL.Query().Get("project") == "" {
		return store.Errorf(store.KindInvalid, "required parameter: project")
	}
	var in struct {
		Name       string      `json:"name"`
		Versioning *versioning `json:"versioning"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, maxMetadataBody)).Decode(&in); err != nil {
		return store.Errorf(store.KindInvalid, "the request body is not a JSON bucket resource: %v", err)
	}
	b, err := s.store.CreateBucket(in.Name, in.Versioning != nil && in.Versioning.Enabled, false)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, bucketJSON(b, baseURL(r)))
	return nil
}

// getBucket serves buckets.get.
func (s *Server) getBucket(w http.ResponseWriter, r *http.Request, name string) error {
	b, err := s.store.Bucket(name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, bucketJSON(b, baseURL(r)))
	return nil
}

// deleteBucket serves buckets.delete: only an empty bucket can go.
func (s *Server) deleteBucket(w http.ResponseWriter, _ *http.Request, name string) error {
	if err := s.store.DeleteBucket(name); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
