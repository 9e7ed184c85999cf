package fakes

import (
	"maps"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/objup/objup/internal/wire"
)

// objectExtra holds the attributes few objects have, so that an object
// without them costs one nil pointer: the ACL, the KMS key, holds, retention
// and contexts. It is never modified once stored.
type objectExtra struct {
	kmsKey         string
	acl            []aclEntry
	temporaryHold  bool
	eventBasedHold *bool
	retentionMode  wire.Object_Retention_Mode
	retainUntil    int64 // Unix microseconds
	contexts       map[string]string
	components     int64 // a composed object's component count (see compose.go)
}

type aclEntry struct{ entity, role string }

// predefinedACLs are the ACLs the predefined_acl names stand for, with the
// fake's project number 0 and no object owner entity.
var predefinedACLs = map[string][]aclEntry{
	"authenticatedRead":      {{"allAuthenticatedUsers", "READER"}},
	"bucketOwnerFullControl": {{"project-owners-0", "OWNER"}},
	"bucketOwnerRead":        {{"project-owners-0", "READER"}},
	"private":                {},
	"projectPrivate":         {{"project-owners-0", "OWNER"}, {"project-editors-0", "OWNER"}, {"project-viewers-0", "READER"}},
	"publicRead":             {{"allUsers", "READER"}},
}

// specExtra checks and returns the rarely set attributes of a write's spec,
// or nil if it sets none.
func specExtra(spec *wire.WriteObjectSpec) (*objectExtra, error) {
	res := spec.GetResource()
	x := &objectExtra{
		kmsKey:         res.GetKmsKey(),
		temporaryHold:  res.GetTemporaryHold(),
		eventBasedHold: res.EventBasedHold,
	}
	if p := spec.GetPredefinedAcl(); p != "" {
		acl, ok := predefinedACLs[p]
		if !ok {
			return nil, status.Errorf(codes.InvalidArgument, "predefined_acl %q is not a predefined ACL", p)
		}
		if len(res.GetAcl()) > 0 {
			return nil, status.Error(codes.InvalidArgument, "predefined_acl and resource.acl exclude each other")
		}
		x.acl = slices.Clone(acl)
	}
	for _, a := range res.GetAcl() {
		if a.GetEntity() == "" || (a.GetRole() != "READER" && a.GetRole() != "OWNER") {
			return nil, status.Errorf(codes.InvalidArgument, "ACL entry %q with role %q: an entity and READER or OWNER are required", a.GetEntity(), a.GetRole())
		}
		x.acl = append(x.acl, aclEntry{a.GetEntity(), a.GetRole()})
	}
	if r := res.GetRetention(); r != nil {
		if r.GetMode() != wire.Object_Retention_UNLOCKED && r.GetMode() != wire.Object_Retention_LOCKED {
			return nil, status.Errorf(codes.InvalidArgument, "retention mode %v is not Unlocked or Locked", r.GetMode())
		}
		until := r.GetRetainUntilTime()
		if until == nil || !until.AsTime().After(time.Now()) {
			return nil, status.Error(codes.InvalidArgument, "retention needs a retain_until_time in the future")
		}
		x.retentionMode, x.retainUntil = r.GetMode(), until.AsTime().UnixMicro()
	}
	if c := res.GetContexts().GetCustom(); len(c) > 0 {
		x.contexts = make(map[string]string, len(c))
		for k, v := range c {
			if k == "" {
				return nil, status.Error(codes.InvalidArgument, "an object context has an empty key")
			}
			x.contexts[k] = v.GetValue()
		}
	}
	if x.kmsKey == "" && x.acl == nil && !x.temporaryHold && x.eventBasedHold == nil && x.retentionMode == 0 && x.contexts == nil {
		return nil, nil
	}
	return x, nil
}

// setExtra puts x's attributes into a storage v2 object.
func (x *objectExtra) setExtra(w *wire.Object) {
	if x == nil {
		return
	}
	w.KmsKey = x.kmsKey
	w.TemporaryHold = x.temporaryHold
	w.EventBasedHold = x.eventBasedHold
	for _, a := range x.acl {
		w.Acl = append(w.Acl, &wire.ObjectAccessControl{Entity: a.entity, Role: a.role})
	}
	if x.retentionMode != 0 {
		w.Retention = &wire.Object_Retention{Mode: x.retentionMode, RetainUntilTime: timestamppb.New(time.UnixMicro(x.retainUntil))}
	}
	if len(x.contexts) > 0 {
		w.Contexts = &wire.ObjectContexts{Custom: make(map[string]*wire.ObjectCustomContextPayload, len(x.contexts))}
		for k, v := range x.contexts {
			w.Contexts.Custom[k] = &wire.ObjectCustomContextPayload{Value: v}
		}
	}
}

// JSON forms of the extra attributes.
type (
	aclResource struct {
		Kind   string `json:"kind"`
		Entity string `json:"entity"`
		Role   string `json:"role"`
		Bucket string `json:"bucket"`
		Object string `json:"object"`
	}
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

// setJSON puts x's attributes into a JSON object resource.
func (x *objectExtra) setJSON(r *objectResource, bucket, object string) {
	if x == nil {
		return
	}
	r.KMSKeyName = x.kmsKey
	r.ComponentCount = int(x.components)
	r.TemporaryHold = x.temporaryHold
	r.EventBasedHold = x.eventBasedHold
	for _, a := range x.acl {
		r.ACL = append(r.ACL, aclResource{Kind: "storage#objectAccessControl", Entity: a.entity, Role: a.role, Bucket: bucket, Object: object})
	}
	if x.retentionMode != 0 {
		mode := "Unlocked"
		if x.retentionMode == wire.Object_Retention_LOCKED {
			mode = "Locked"
		}
		r.Retention = &retentionResource{Mode: mode, RetainUntilTime: formatTime(x.retainUntil)}
	}
	if len(x.contexts) > 0 {
		r.Contexts = &contextsResource{Custom: make(map[string]contextPayload, len(x.contexts))}
		for _, k := range slices.Sorted(maps.Keys(x.contexts)) {
			r.Contexts.Custom[k] = contextPayload{Value: x.contexts[k]}
		}
	}
}
