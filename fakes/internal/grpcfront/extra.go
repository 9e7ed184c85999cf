package grpcfront

import (
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes/internal/core"
	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/internal/wire"
)

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
		acl, ok := core.PredefinedObjectACLs[p]
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
