package core

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/objup/objup/fakes/internal/store"
)

// aclResource is the JSON API's bucketAccessControl and
// objectAccessControl resources.
type ACLResource struct {
	Kind        string       `json:"kind"`
	ID          string       `json:"id"`
	SelfLink    string       `json:"selfLink"`
	Bucket      string       `json:"bucket"`
	Object      string       `json:"object,omitempty"`
	Generation  string       `json:"generation,omitempty"`
	Entity      string       `json:"entity"`
	Role        string       `json:"role"`
	Email       string       `json:"email,omitempty"`
	Domain      string       `json:"domain,omitempty"`
	ProjectTeam *projectTeam `json:"projectTeam,omitempty"`
	Etag        string       `json:"etag"`
}

type projectTeam struct {
	ProjectNumber string `json:"projectNumber"`
	Team          string `json:"team"`
}

// describe fills in what the entity of r says: its email, domain or
// project team.
func (r *ACLResource) Describe() *ACLResource {
	e := r.Entity
	switch {
	case strings.HasPrefix(e, "user-"), strings.HasPrefix(e, "group-") && strings.Contains(e, "@"):
		_, r.Email, _ = strings.Cut(e, "-")
	case strings.HasPrefix(e, "domain-"):
		r.Domain = strings.TrimPrefix(e, "domain-")
	case strings.HasPrefix(e, "project-"):
		if team, num, ok := strings.Cut(strings.TrimPrefix(e, "project-"), "-"); ok {
			r.ProjectTeam = &projectTeam{ProjectNumber: num, Team: team}
		}
	}
	return r
}

// objectACL returns a copy of the ACL of the attributes a.
func ObjectACL(a *store.Attrs) []store.ACLEntry {
	if a.Extra == nil {
		return nil
	}
	return slices.Clone(a.Extra.ACL)
}

// setObjectACL sets the ACL of the attributes a, on a copy of their Extra
// (which the store never changes once it holds it).
func SetObjectACL(a *store.Attrs, acl []store.ACLEntry) {
	editExtra(a, func(x *store.Extra) { x.ACL = acl })
}

// editExtra changes the rarely set attributes of a with edit, on a copy;
// attributes left with none of them have no Extra.
func editExtra(a *store.Attrs, edit func(*store.Extra)) {
	var x store.Extra
	if a.Extra != nil {
		x = *a.Extra
	}
	edit(&x)
	if len(x.ACL) == 0 {
		x.ACL = nil
	}
	if x.KMSKey == "" && x.ACL == nil && !x.TemporaryHold && x.EventBasedHold == nil && x.RetentionMode == 0 && x.Contexts == nil && x.Components == 0 {
		a.Extra = nil
		return
	}
	a.Extra = &x
}

// applyPredefinedACL sets the ACL of the attributes a to the predefined
// object ACL named p, if p is not "".
func ApplyPredefinedACL(a *store.Attrs, p string) error {
	if p == "" {
		return nil
	}
	acl, ok := PredefinedObjectACLs[p]
	if !ok {
		return store.Errorf(store.KindInvalid, "predefinedAcl %q is not a predefined object ACL", p)
	}
	SetObjectACL(a, slices.Clone(acl))
	return nil
}

// predefinedBucketACLs are the bucket ACLs the predefinedAcl names stand
// for. The object-only names bucketOwnerFullControl and bucketOwnerRead
// are taken too, as the storage testbench takes them (clients send them):
// the bucket's owner, the project's owners, owns it.
var predefinedBucketACLs = func() map[string][]store.ACLEntry {
	owners := store.ACLEntry{Entity: "project-owners-" + store.ProjectNumber, Role: "OWNER"}
	return map[string][]store.ACLEntry{
		"authenticatedRead":      {owners, {Entity: "allAuthenticatedUsers", Role: "READER"}},
		"private":                {owners},
		"projectPrivate":         store.DefaultBucketACL(),
		"publicRead":             {owners, {Entity: "allUsers", Role: "READER"}},
		"publicReadWrite":        {owners, {Entity: "allUsers", Role: "WRITER"}},
		"bucketOwnerFullControl": {owners},
		"bucketOwnerRead":        {owners},
	}
}()

// checkEntry checks an ACL entry: an entity, and a role a bucket's ACL
// (READER, WRITER, OWNER) or an object's (READER, OWNER) takes.
func CheckEntry(e store.ACLEntry, bucket bool) error {
	switch {
	case e.Entity == "":
		return store.Errorf(store.KindInvalid, "an ACL entry needs an entity")
	case e.Role == "READER", e.Role == "OWNER", e.Role == "WRITER" && bucket:
		return nil
	case bucket:
		return store.Errorf(store.KindInvalid, "ACL entry %q: role %q is not READER, WRITER or OWNER", e.Entity, e.Role)
	}
	return store.Errorf(store.KindInvalid, "ACL entry %q: role %q is not READER or OWNER", e.Entity, e.Role)
}

// parseACL reads a field holding a list of ACL entries (null: none), for a
// bucket or an object.
func parseACL(raw json.RawMessage, field string, bucket bool) ([]store.ACLEntry, error) {
	if IsNull(raw) {
		return nil, nil
	}
	var in []struct{ Entity, Role string }
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, store.Errorf(store.KindInvalid, "field %s: %v", field, err)
	}
	out := make([]store.ACLEntry, 0, len(in))
	for _, e := range in {
		entry := store.ACLEntry{Entity: e.Entity, Role: e.Role}
		if err := CheckEntry(entry, bucket); err != nil {
			return nil, err
		}
		out = slices.DeleteFunc(out, func(x store.ACLEntry) bool { return x.Entity == e.Entity })
		out = append(out, entry)
	}
	return out, nil
}
