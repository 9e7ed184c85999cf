// Package core is what GCS does, whichever wire carried the request: the
// resumable sessions of both APIs (on disk with the store), appendable
// objects, copies and rewrites, the patches of objects and buckets, ACL
// entries, the roles' permissions, the commit delays and the admission of
// writes against a bucket's capacity. It knows neither net/http nor
// gRPC's server: the fronts (internal/grpcfront, internal/httpfront)
// read a request, call the core, and write its answer in their API's
// form.
package core

import (
	"github.com/objup/objup/fakes/capacity"
	"github.com/objup/objup/fakes/internal/mpu"
	"github.com/objup/objup/fakes/internal/store"
)

// Core is one fake GCS's state and behaviour below its fronts.
type Core struct {
	Store      *store.Store
	SessionDir string                  // on disk: the directory of the sessions' files (see session_disk.go)
	Resumables store.Sessions[*Upload] // resumable sessions, of both APIs
	MPU        *mpu.Registry           // the XML API's multipart uploads in progress
	Commits    Commits                 // WithCommitDelay, WithCommitDelays, WithDeadlineDrop
	Limiter    *capacity.Limiter       // the buckets' write capacity; nil: none (see admit.go)
}
