package fakes

import (
	"maps"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/internal/wire"
)

// predefinedObjectACLs are the object ACLs the predefined ACL names
// (predefined_acl, predefinedAcl, predefinedDefaultObjectAcl) stand for,
// with the fake's project number 0 and no object owner entity.
var predefinedObjectACLs = map[string][]store.ACLEntry{
	"authenticatedRead":      {{Entity: "allAuthenticatedUsers", Role: "READER"}},
	"bucketOwnerFullControl": {{Entity: "project-owners-0", Role: "OWNER"}},
	"bucketOwnerRead":        {{Entity: "project-owners-0", Role: "READER"}},
	"private":                {},
	"projectPrivate":         {{Entity: "project-owners-0", Role: "OWNER"}, {Entity: "project-editors-0", Role: "OWNER"}, {Entity: "project-viewers-0", Role: "READER"}},
	"publicRead":             {{Entity: "allUsers", Role: "READER"}},
}

// specExtra checks and returns the rarely set attributes of a write's spec,
// or nil if it sets none.
func specExtra(spec *wire.WriteObjectSpec) (*store.Extra, error) {
	res := spec.GetResource()
	x := &store.Extra{
		KMSKey:         res.GetKmsKey(),
		TemporaryHold:  res.GetTemporaryHold(),
		EventBasedHold: res.EventBasedHold,
	}
	if p := spec.GetPredefinedAcl(); p != "" {
		acl, ok := predefinedObjectACLs[p]
		if !ok {
			return nil, status.Errorf(codes.InvalidArgument, "predefined_acl %q is not a predefined ACL", p)
		}
		if len(res.GetAcl()) > 0 {
			return nil, status.Error(codes.InvalidArgument, "predefined_acl and resource.acl exclude each other")
		}
		x.ACL = slices.Clone(acl)
	}
	for _, a := range res.GetAcl() {
		if a.GetEntity() == "" || (a.GetRole() != "READER" && a.GetRole() != "OWNER") {
			return nil, status.Errorf(codes.InvalidArgument, "ACL entry %q with role %q: an entity and READER or OWNER are required", a.GetEntity(), a.GetRole())
		}
		x.ACL = append(x.ACL, store.ACLEntry{Entity: a.GetEntity(), Role: a.GetRole()})
	}
	if r := res.GetRetention(); r != nil {
		if r.GetMode() != wire.Object_Retention_UNLOCKED && r.GetMode() != wire.Object_Retention_LOCKED {
			return nil, status.Errorf(codes.InvalidArgument, "retention mode %v is not Unlocked or Locked", r.GetMode())
		}
		until := r.GetRetainUntilTime()
		if until == nil || !until.AsTime().After(time.Now()) {
			return nil, status.Error(codes.InvalidArgument, "retention needs a retain_until_time in the future")
		}
		x.RetentionMode, x.RetainUntil = r.GetMode(), until.AsTime().UnixMicro()
	}
	if c := res.GetContexts().GetCustom(); len(c) > 0 {
		x.Contexts = make(map[string]string, len(c))
		for k, v := range c {
			if k == "" {
				return nil, status.Error(codes.InvalidArgument, "an object context has an empty key")
			}
			x.Contexts[k] = v.GetValue()
		}
	}
	if x.KMSKey == "" && x.ACL == nil && !x.TemporaryHold && x.EventBasedHold == nil && x.RetentionMode == 0 && x.Contexts == nil {
		return nil, nil
	}
	return x, nil
}

// setExtra puts x's attributes into a storage v2 object.
func setExtra(x *store.Extra, w *wire.Object) {
	if x == nil {
		return
	}
	w.KmsKey = x.KMSKey
	w.TemporaryHold = x.TemporaryHold
	w.EventBasedHold = x.EventBasedHold
	for _, a := range x.ACL {
		w.Acl = append(w.Acl, &wire.ObjectAccessControl{Entity: a.Entity, Role: a.Role})
	}
	if x.RetentionMode != 0 {
		w.Retention = &wire.Object_Retention{Mode: x.RetentionMode, RetainUntilTime: timestamppb.New(time.UnixMicro(x.RetainUntil))}
	}
	if len(x.Contexts) > 0 {
		w.Contexts = &wire.ObjectContexts{Custom: make(map[string]*wire.ObjectCustomContextPayload, len(x.Contexts))}
		for k, v := range x.Contexts {
			w.Contexts.Custom[k] = &wire.ObjectCustomContextPayload{Value: v}
		}
	}
}

// JSON forms of the extra attributes.
type (
	retentionResource struct {
		Mode            string `json:"mode"`
		RetainUntilTime string `json:"retainUntilTime"`
	}
	contextsResource struct {
		Custom map[string]contextPayload `json:"custom"`
	}
	contextPayload struct {
		Value string `json:"value"`
	}
)

// setJSON puts x's attributes into a JSON object resource: that of
// generation gen and metageneration meta of object in bucket; base is the
// server's URL as the client reached it.
func setJSON(x *store.Extra, r *objectResource, bucket, object string, gen, meta int64, base string) {
	if x == nil {
		return
	}
	r.KMSKeyName = x.KMSKey
	r.ComponentCount = int(x.Components)
	r.TemporaryHold = x.TemporaryHold
	r.EventBasedHold = x.EventBasedHold
	for _, a := range x.ACL {
		r.ACL = append(r.ACL, objectACLJSON(bucket, object, gen, meta, a, base))
	}
	if x.RetentionMode != 0 {
		mode := "Unlocked"
		if x.RetentionMode == wire.Object_Retention_LOCKED {
			mode = "Locked"
		}
		r.Retention = &retentionResource{Mode: mode, RetainUntilTime: formatTime(x.RetainUntil)}
	}
	if len(x.Contexts) > 0 {
		r.Contexts = &contextsResource{Custom: make(map[string]contextPayload, len(x.Contexts))}
		for _, k := range slices.Sorted(maps.Keys(x.Contexts)) {
			r.Contexts.Custom[k] = contextPayload{Value: x.Contexts[k]}
		}
	}
}
