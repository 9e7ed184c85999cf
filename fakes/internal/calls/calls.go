// Package calls is the fake's per-call layer, between its fronts and its
// core: the request log (Call, CallLog), the fault rules (Faults) and the
// role of a call's credential (Layer.RoleOf), and the retry test
// registry. A front opens a call here, asks which rules apply to it, and
// records it here when it ends.
package calls

import (
	"github.com/objup/objup/fakes/internal/core"
	"github.com/objup/objup/fakes/internal/retrytest"
)

// Layer is one fake GCS's per-call state.
type Layer struct {
	Faults Faults
	Log    CallLog
	Creds  map[string]core.Role // WithCredential: the role of each bearer token; nil: none
	Retry  *retrytest.Tests
}
