package httpfront

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/objup/objup/fakes/internal/core"
	"github.com/objup/objup/fakes/internal/store"
)

// The access control methods: bucketAccessControls,
// defaultObjectAccessControls and objectAccessControls (list, insert, get,
// update, patch, delete). The ACLs are stored and returned, and predefined
// ACLs applied; nothing is enforced. A bucket's ACL changes bump its
// metageneration, an object's its own.

// aclList is the JSON API's response to an ACL list.
type aclList struct {
	Kind  string              `json:"kind"`
	Items []*core.ACLResource `json:"items"`
}

// bucketACLJSON is entry e of bucket b's ACL, as a bucketAccessControl.
func bucketACLJSON(b *store.Bucket, a *store.BucketAttrs, e store.ACLEntry, base string) *core.ACLResource {
	return (&core.ACLResource{
		Kind: "storage#bucketAccessControl", ID: b.Name() + "/" + e.Entity,
		SelfLink: base + "/storage/v1/b/" + url.PathEscape(b.Name()) + "/acl/" + url.PathEscape(e.Entity),
		Bucket:   b.Name(), Entity: e.Entity, Role: e.Role, Etag: store.MetaEtag(a.Metageneration),
	}).Describe()
}

// defaultACLJSON is entry e of bucket b's default object ACL, as an
// objectAccessControl.
func defaultACLJSON(b *store.Bucket, a *store.BucketAttrs, e store.ACLEntry, base string) *core.ACLResource {
	return (&core.ACLResource{
		Kind: "storage#objectAccessControl", ID: b.Name() + "/" + e.Entity,
		SelfLink: base + "/storage/v1/b/" + url.PathEscape(b.Name()) + "/defaultObjectAcl/" + url.PathEscape(e.Entity),
		Bucket:   b.Name(), Entity: e.Entity, Role: e.Role, Etag: store.MetaEtag(a.Metageneration),
	}).Describe()
}

// objectACLJSON is entry e of the ACL of generation gen (metageneration
// meta) of object in bucket, as an objectAccessControl.
func objectACLJSON(bucket, object string, gen, meta int64, e store.ACLEntry, base string) *core.ACLResource {
	g := strconv.FormatInt(gen, 10)
	return (&core.ACLResource{
		Kind: "storage#objectAccessControl", ID: bucket + "/" + object + "/" + g + "/" + e.Entity,
		SelfLink: base + "/storage/v1/b/" + url.PathEscape(bucket) + "/o/" + url.PathEscape(object) + "/acl/" + url.PathEscape(e.Entity),
		Bucket:   bucket, Object: object, Generation: g, Entity: e.Entity, Role: e.Role,
		Etag: store.MetaEtag(meta),
	}).Describe()
}

// aclRequest is the body of an ACL insert, update or patch.
type aclRequest struct {
	Entity string  `json:"entity"`
	Role   *string `json:"role"`
}

// readACLRequest reads the body of an ACL insert, update or patch.
func readACLRequest(r *http.Request) (aclRequest, error) {
	var in aclRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxMetadataBody)).Decode(&in); err != nil && !errors.Is(err, io.EOF) {
		return in, store.Errorf(store.KindInvalid, "the request body is not a JSON access control resource: %v", err)
	}
	return in, nil
}

// aclVerb is one of the six ACL methods.
type aclVerb string

const (
	verbList   aclVerb = "list"
	verbInsert aclVerb = "insert"
	verbGet    aclVerb = "get"
	verbUpdate aclVerb = "update"
	verbPatch  aclVerb = "patch"
	verbDelete aclVerb = "delete"
)

// aclVerbOf is the ACL method of a request: to the ACL itself (list,
// insert) or to one entity's entry.
func aclVerbOf(method string, entity bool) (aclVerb, bool) {
	switch {
	case !entity && method == http.MethodGet:
		return verbList, true
	case !entity && method == http.MethodPost:
		return verbInsert, true
	case entity && method == http.MethodGet:
		return verbGet, true
	case entity && method == http.MethodPut:
		return verbUpdate, true
	case entity && method == http.MethodPatch:
		return verbPatch, true
	case entity && method == http.MethodDelete:
		return verbDelete, true
	}
	return "", false
}

// editACL carries out an insert, update, patch or delete of entity on acl
// (an insert's entity is in the body) and returns the entry it leaves, or
// a 404 if entity has none (but for an insert).
func editACL(acl *[]store.ACLEntry, verb aclVerb, entity string, in aclRequest, bucket bool) (store.ACLEntry, error) {
	if verb == verbInsert {
		entity = in.Entity
	} else if in.Entity != "" && in.Entity != entity {
		return store.ACLEntry{}, store.Errorf(store.KindInvalid, "the body names entity %q, the path %q", in.Entity, entity)
	}
	i := slices.IndexFunc(*acl, func(e store.ACLEntry) bool { return e.Entity == entity })
	if i < 0 && verb != verbInsert {
		return store.ACLEntry{}, store.Errorf(store.KindNotFound, "no ACL entry for entity %q", entity)
	}
	if verb == verbDelete {
		e := (*acl)[i]
		*acl = slices.Delete(*acl, i, i+1)
		return e, nil
	}
	e := store.ACLEntry{Entity: entity}
	switch {
	case in.Role != nil:
		e.Role = *in.Role
	case verb == verbPatch:
		e.Role = (*acl)[i].Role
	}
	if err := core.CheckEntry(e, bucket); err != nil {
		return e, err
	}
	if i < 0 {
		*acl = append(*acl, e)
	} else {
		(*acl)[i] = e
	}
	return e, nil
}

// aclEntity reads the escaped entity of an ACL path.
func aclEntity(p string) (string, bool) {
	e, err := url.PathUnescape(p)
	return e, err == nil && e != "" && !strings.Contains(p, "/")
}

// routeBucketACL routes a request to a bucket's ACL (def: its default
// object ACL); entity is the escaped path after "acl" or
// "defaultObjectAcl", hasEntity whether there is one.
func (s *Server) routeBucketACL(r *http.Request, bkt string, def bool, entity string, hasEntity bool) *HTTPRoute {
	resource := "bucketAccessControls"
	if def {
		resource = "defaultObjectAccessControls"
	}
	verb, ok := aclVerbOf(r.Method, hasEntity)
	e, okEntity := aclEntity(entity)
	if !ok || hasEntity && !okEntity {
		rt := unimplemented(r.Method+" "+resource, r.Method+" "+r.URL.Path)
		rt.bucket = bkt
		return rt
	}
	return to(resource+"."+string(verb), bkt, "", func(w http.ResponseWriter, r *http.Request) error {
		return s.bucketACL(w, r, bkt, def, verb, e)
	})
}

// bucketACL serves the bucketAccessControls and
// defaultObjectAccessControls methods. They take the bucket's
// metageneration preconditions.
func (s *Server) bucketACL(w http.ResponseWriter, r *http.Request, bkt string, def bool, verb aclVerb, entity string) error {
	base := baseURL(r)
	entryJSON := func(b *store.Bucket, a *store.BucketAttrs, e store.ACLEntry) *core.ACLResource {
		if def {
			return defaultACLJSON(b, a, e, base)
		}
		return bucketACLJSON(b, a, e, base)
	}
	acl := func(a *store.BucketAttrs) *[]store.ACLEntry {
		if def {
			return &a.DefaultObjectACL
		}
		return &a.ACL
	}
	switch verb {
	case verbList, verbGet:
		b, a, err := s.bucketAttrs(r, bkt)
		if err != nil {
			return err
		}
		if verb == verbGet {
			i := slices.IndexFunc(*acl(a), func(e store.ACLEntry) bool { return e.Entity == entity })
			if i < 0 {
				return store.Errorf(store.KindNotFound, "no ACL entry for entity %q in bucket %q", entity, bkt)
			}
			WriteJSON(w, http.StatusOK, entryJSON(b, a, (*acl(a))[i]))
			return nil
		}
		out := &aclList{Kind: "storage#bucketAccessControls", Items: []*core.ACLResource{}}
		if def {
			out.Kind = "storage#objectAccessControls"
		}
		for _, e := range *acl(a) {
			out.Items = append(out.Items, entryJSON(b, a, e))
		}
		WriteJSON(w, http.StatusOK, out)
		return nil
	}
	in, err := readACLRequest(r)
	if err != nil {
		return err
	}
	cond, err := queryConditions(r.URL.Query())
	if err != nil {
		return err
	}
	b, err := s.Store.Bucket(bkt)
	if err != nil {
		return err
	}
	var entry store.ACLEntry
	a, err := b.UpdateAttrs(cond, func(a *store.BucketAttrs) error {
		var err error
		entry, err = editACL(acl(a), verb, entity, in, !def)
		return err
	})
	if err != nil {
		return err
	}
	if verb == verbDelete {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	WriteJSON(w, http.StatusOK, entryJSON(b, a, entry))
	return nil
}

// routeObjectACL routes a request to an object's ACL; entity is the
// escaped path after "acl/", "" for the ACL itself.
func (s *Server) routeObjectACL(r *http.Request, bkt, name, entity string) *HTTPRoute {
	verb, ok := aclVerbOf(r.Method, entity != "")
	e, okEntity := aclEntity(entity)
	if !ok || entity != "" && !okEntity {
		rt := unimplemented(r.Method+" objectAccessControls", r.Method+" "+r.URL.Path)
		rt.bucket, rt.object = bkt, name
		return rt
	}
	return to("objectAccessControls."+string(verb), bkt, name, func(w http.ResponseWriter, r *http.Request) error {
		return s.objectACL(w, r, bkt, name, verb, e)
	})
}

// objectACL serves the objectAccessControls methods, on the live object
// or the generation the generation parameter names, under the object
// preconditions; a change bumps the object's metageneration.
func (s *Server) objectACL(w http.ResponseWriter, r *http.Request, bkt, name string, verb aclVerb, entity string) error {
	base := baseURL(r)
	if verb == verbList || verb == verbGet {
		b, o, err := s.objectOf(r, bkt, name)
		if err != nil {
			return err
		}
		var acl []store.ACLEntry
		if x := o.Attrs().Extra; x != nil {
			acl = x.ACL
		}
		if verb == verbGet {
			i := slices.IndexFunc(acl, func(e store.ACLEntry) bool { return e.Entity == entity })
			if i < 0 {
				return store.Errorf(store.KindNotFound, "no ACL entry for entity %q on object %q", entity, name)
			}
			WriteJSON(w, http.StatusOK, objectACLJSON(b.Name(), name, o.Generation(), o.Metageneration(), acl[i], base))
			return nil
		}
		out := &aclList{Kind: "storage#objectAccessControls", Items: []*core.ACLResource{}}
		for _, e := range acl {
			out.Items = append(out.Items, objectACLJSON(b.Name(), name, o.Generation(), o.Metageneration(), e, base))
		}
		WriteJSON(w, http.StatusOK, out)
		return nil
	}
	in, err := readACLRequest(r)
	if err != nil {
		return err
	}
	var entry store.ACLEntry
	b, o, err := s.editObject(r, bkt, name, func(a *store.Attrs) error {
		acl := core.ObjectACL(a)
		var err error
		entry, err = editACL(&acl, verb, entity, in, false)
		core.SetObjectACL(a, acl)
		return err
	})
	if err != nil {
		return err
	}
	if verb == verbDelete {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	WriteJSON(w, http.StatusOK, objectACLJSON(b.Name(), name, o.Generation(), o.Metageneration(), entry, base))
	return nil
}
