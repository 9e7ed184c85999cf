package httpfront

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/objup/objup/fakes/internal/core"
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
	case size == 0 || size > core.MaxPageSize:
		size = core.MaxPageSize
	}
	after := ""
	if t := q.Get("pageToken"); t != "" {
		name, _, ok := store.ParsePageToken(t)
		if !ok {
			return store.Errorf(store.KindInvalid, "page token %q is not one this server issued", t)
		}
		after = name
	}
	bs, more := s.Store.ListBuckets(q.Get("prefix"), after, int(size))
	out := &bucketList{Kind: "storage#buckets"}
	base := baseURL(r)
	for _, b := range bs {
		out.Items = append(out.Items, bucketJSON(b, b.Attrs(), base))
	}
	if more {
		out.NextPageToken = store.PageToken(bs[len(bs)-1].Name(), 0)
	}
	WriteJSON(w, http.StatusOK, out)
	return nil
}

// insertBucket serves buckets.insert: the bucket resource gives the name
// and the attributes buckets.patch sets; predefinedAcl and
// predefinedDefaultObjectAcl, or the default (projectPrivate), give its
// ACLs.
func (s *Server) insertBucket(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if q.Get("project") == "" {
		return store.Errorf(store.KindInvalid, "required parameter: project")
	}
	m, err := readBucketMetadata(r)
	if err != nil {
		return err
	}
	name, _, _, err := core.ObjectMetadata(m).Str("name")
	if err != nil {
		return err
	}
	a := store.BucketAttrs{ACL: store.DefaultBucketACL(), DefaultObjectACL: store.DefaultObjectACL()}
	if err := m.Apply(&a, q, true); err != nil {
		return err
	}
	b, err := s.Store.CreateBucketAttrs(name, a, false)
	if err != nil {
		return err
	}
	WriteJSON(w, http.StatusOK, bucketJSON(b, b.Attrs(), baseURL(r)))
	return nil
}

// bucketAttrs returns bucket name and its attributes, once the request's
// metageneration preconditions held.
func (s *Server) bucketAttrs(r *http.Request, name string) (*store.Bucket, *store.BucketAttrs, error) {
	cond, err := queryConditions(r.URL.Query())
	if err != nil {
		return nil, nil, err
	}
	b, err := s.Store.Bucket(name)
	if err != nil {
		return nil, nil, err
	}
	a := b.Attrs()
	if err := store.CheckBucket(cond, a.Metageneration); err != nil {
		return nil, nil, err
	}
	return b, a, nil
}

// getBucket serves buckets.get.
func (s *Server) getBucket(w http.ResponseWriter, r *http.Request, name string) error {
	b, a, err := s.bucketAttrs(r, name)
	if err != nil {
		return err
	}
	WriteJSON(w, http.StatusOK, bucketJSON(b, a, baseURL(r)))
	return nil
}

// storageLayout is the JSON API's buckets.getStorageLayout response.
// HierarchicalNamespace and CustomPlacementConfig are there only when the
// bucket has them, as on GCS.
type storageLayout struct {
	Kind                  string          `json:"kind"`
	Bucket                string          `json:"bucket"`
	Location              string          `json:"location"`
	LocationType          string          `json:"locationType"`
	CustomPlacementConfig json.RawMessage `json:"customPlacementConfig,omitempty"`
	HierarchicalNamespace json.RawMessage `json:"hierarchicalNamespace,omitempty"`
}

// getStorageLayout serves buckets.getStorageLayout: where the bucket is,
// and whether its namespace is hierarchical (the hierarchicalNamespace the
// bucket was created or updated with, when enabled). Its prefix parameter
// only scopes the permission check on GCS, which the fake does not make.
func (s *Server) getStorageLayout(w http.ResponseWriter, r *http.Request, name string) error {
	b, err := s.Store.Bucket(name)
	if err != nil {
		return err
	}
	a := b.Attrs()
	loc, locType := b.Location()
	l := &storageLayout{Kind: "storage#storageLayout", Bucket: b.Name(), Location: loc, LocationType: locType}
	if v := a.Other["customPlacementConfig"]; v != "" && v != "null" {
		l.CustomPlacementConfig = json.RawMessage(v)
	}
	if v := a.Other["hierarchicalNamespace"]; v != "" {
		var hns struct {
			Enabled bool `json:"enabled"`
		}
		if json.Unmarshal([]byte(v), &hns) == nil && hns.Enabled {
			l.HierarchicalNamespace = json.RawMessage(`{"enabled":true}`)
		}
	}
	WriteJSON(w, http.StatusOK, l)
	return nil
}

// listManagedFolders serves managedFolders.list: the fake keeps no managed
// folders (it does not implement their insert), so a bucket's list is
// empty, as a new bucket's is on GCS. gcloud storage lists them before it
// deletes a bucket.
func (s *Server) listManagedFolders(w http.ResponseWriter, r *http.Request, name string) error {
	if _, err := s.Store.Bucket(name); err != nil {
		return err
	}
	WriteJSON(w, http.StatusOK, map[string]string{"kind": "storage#managedFolders"})
	return nil
}

// deleteBucket serves buckets.delete: only an empty bucket can go.
func (s *Server) deleteBucket(w http.ResponseWriter, r *http.Request, name string) error {
	if _, _, err := s.bucketAttrs(r, name); err != nil {
		return err
	}
	if err := s.Store.DeleteBucket(name); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// updateBucket serves buckets.patch (patch) and buckets.update: the body's
// fields replace the bucket's (with patch, absent fields are kept, null
// ones cleared and labels merged), predefinedAcl and
// predefinedDefaultObjectAcl replace its ACLs, under the metageneration
// preconditions; the metageneration goes up by one.
func (s *Server) updateBucket(w http.ResponseWriter, r *http.Request, name string, patch bool) error {
	q := r.URL.Query()
	cond, err := queryConditions(q)
	if err != nil {
		return err
	}
	m, err := readBucketMetadata(r)
	if err != nil {
		return err
	}
	b, err := s.Store.Bucket(name)
	if err != nil {
		return err
	}
	a, err := b.UpdateAttrs(cond, func(a *store.BucketAttrs) error { return m.Apply(a, q, patch) })
	if err != nil {
		return err
	}
	WriteJSON(w, http.StatusOK, bucketJSON(b, a, baseURL(r)))
	return nil
}

// lockRetention serves buckets.lockRetentionPolicy: the bucket's retention
// policy is locked, under ifMetagenerationMatch, which GCS requires, and
// the metageneration goes up by one. The fake stores the lock (the policy
// can no longer be removed or shortened) and does not hold objects back.
// A bucket whose policy is locked, or that has none, is answered as it
// is, as the storage testbench does (the conformance suites lock buckets
// without a policy).
func (s *Server) lockRetention(w http.ResponseWriter, r *http.Request, name string) error {
	if !r.URL.Query().Has("ifMetagenerationMatch") {
		return store.Errorf(store.KindInvalid, "required parameter: ifMetagenerationMatch")
	}
	b, a, err := s.bucketAttrs(r, name)
	if err != nil {
		return err
	}
	if a.Retention != nil && !a.Retention.Locked {
		cond, _ := queryConditions(r.URL.Query())
		a, err = b.UpdateAttrs(cond, func(a *store.BucketAttrs) error {
			if a.Retention != nil {
				a.Retention.Locked = true
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	WriteJSON(w, http.StatusOK, bucketJSON(b, a, baseURL(r)))
	return nil
}

// bucketResource is the JSON API's bucket resource. Other holds the fields
// the fake keeps without reading them, as JSON, which MarshalJSON adds.
type bucketResource struct {
	Kind                  string                `json:"kind"`
	ID                    string                `json:"id"`
	SelfLink              string                `json:"selfLink"`
	Name                  string                `json:"name"`
	ProjectNumber         string                `json:"projectNumber"`
	Metageneration        string                `json:"metageneration"`
	Location              string                `json:"location"`
	LocationType          string                `json:"locationType"`
	StorageClass          string                `json:"storageClass"`
	Etag                  string                `json:"etag"`
	TimeCreated           string                `json:"timeCreated"`
	Updated               string                `json:"updated"`
	Owner                 *aclOwner             `json:"owner,omitempty"`
	Versioning            *core.Versioning      `json:"versioning,omitempty"`
	Labels                map[string]string     `json:"labels,omitempty"`
	DefaultEventBasedHold bool                  `json:"defaultEventBasedHold,omitempty"`
	RetentionPolicy       *core.RetentionPolicy `json:"retentionPolicy,omitempty"`
	ACL                   []*core.ACLResource   `json:"acl,omitempty"`
	DefaultObjectACL      []*core.ACLResource   `json:"defaultObjectAcl,omitempty"`
	Other                 map[string]string     `json:"-"`
}

type aclOwner struct {
	Entity string `json:"entity"`
}

// MarshalJSON writes the resource's fields, then those of Other, in key
// order.
func (b *bucketResource) MarshalJSON() ([]byte, error) {
	type plain bucketResource
	out, err := json.Marshal((*plain)(b))
	if err != nil || len(b.Other) == 0 {
		return out, err
	}
	out = bytes.TrimSuffix(out, []byte("}"))
	for _, k := range slices.Sorted(maps.Keys(b.Other)) {
		key, _ := json.Marshal(k)
		out = append(out, ',')
		out = append(out, key...)
		out = append(out, ':')
		out = append(out, b.Other[k]...)
	}
	return append(out, '}'), nil
}

// bucketJSON returns bucket b with the attributes a as the JSON API's
// bucket resource; base is the server's URL as the client reached it.
func bucketJSON(b *store.Bucket, a *store.BucketAttrs, base string) *bucketResource {
	loc, locType := b.Location()
	r := &bucketResource{
		Kind:                  "storage#bucket",
		ID:                    b.Name(),
		SelfLink:              base + "/storage/v1/b/" + url.PathEscape(b.Name()),
		Name:                  b.Name(),
		ProjectNumber:         store.ProjectNumber,
		Metageneration:        strconv.FormatInt(a.Metageneration, 10),
		Location:              loc,
		LocationType:          locType,
		StorageClass:          a.StorageClass,
		Etag:                  store.MetaEtag(a.Metageneration),
		TimeCreated:           core.FormatTime(b.Created()),
		Updated:               core.FormatTime(a.Updated),
		Owner:                 &aclOwner{Entity: "project-owners-" + store.ProjectNumber},
		Labels:                a.Labels,
		DefaultEventBasedHold: a.DefaultEventBasedHold,
		Other:                 a.Other,
	}
	if a.Versioning {
		r.Versioning = &core.Versioning{Enabled: true}
	}
	if p := a.Retention; p != nil {
		r.RetentionPolicy = &core.RetentionPolicy{RetentionPeriod: strconv.FormatInt(p.Period, 10), EffectiveTime: core.FormatTime(p.Effective), IsLocked: p.Locked}
	}
	for _, e := range a.ACL {
		r.ACL = append(r.ACL, bucketACLJSON(b, a, e, base))
	}
	for _, e := range a.DefaultObjectACL {
		r.DefaultObjectACL = append(r.DefaultObjectACL, defaultACLJSON(b, a, e, base))
	}
	return r
}

// bucketList is the JSON API's buckets.list response.
type bucketList struct {
	Kind          string            `json:"kind"`
	NextPageToken string            `json:"nextPageToken,omitempty"`
	Items         []*bucketResource `json:"items,omitempty"`
}

// readBucketMetadata reads a request's bucket resource; an empty body is
// an empty resource.
func readBucketMetadata(r *http.Request) (core.BucketMetadata, error) {
	var m core.BucketMetadata
	if err := json.NewDecoder(io.LimitReader(r.Body, maxMetadataBody)).Decode(&m); err != nil && !errors.Is(err, io.EOF) {
		return nil, store.Errorf(store.KindInvalid, "the request body is not a JSON bucket resource: %v", err)
	}
	return m, nil
}
