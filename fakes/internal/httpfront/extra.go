package httpfront

import (
	"maps"
	"slices"

	"github.com/objup/objup/fakes/internal/core"
	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/internal/wire"
)

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
		r.Retention = &retentionResource{Mode: mode, RetainUntilTime: core.FormatTime(x.RetainUntil)}
	}
	if len(x.Contexts) > 0 {
		r.Contexts = &contextsResource{Custom: make(map[string]contextPayload, len(x.Contexts))}
		for _, k := range slices.Sorted(maps.Keys(x.Contexts)) {
			r.Contexts.Custom[k] = contextPayload{Value: x.Contexts[k]}
		}
	}
}
