package core

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/internal/wire"
)

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

// predefinedObjectACLs are the object ACLs the predefined ACL names
// (predefined_acl, predefinedAcl, predefinedDefaultObjectAcl) stand for,
// with the fake's project number 0 and no object owner entity.
var PredefinedObjectACLs = map[string][]store.ACLEntry{
	"authenticatedRead":      {{Entity: "allAuthenticatedUsers", Role: "READER"}},
	"bucketOwnerFullControl": {{Entity: "project-owners-0", Role: "OWNER"}},
	"bucketOwnerRead":        {{Entity: "project-owners-0", Role: "READER"}},
	"private":                {},
	"projectPrivate":         {{Entity: "project-owners-0", Role: "OWNER"}, {Entity: "project-editors-0", Role: "OWNER"}, {Entity: "project-viewers-0", Role: "READER"}},
	"publicRead":             {{Entity: "allUsers", Role: "READER"}},
}
