package api

import (
	"github.com/objup/objup/fakes/capacity"
	"github.com/objup/objup/fakes/internal/store"
)

// CapacityError is the error that answers a write of bucket/object the
// capacity's verdict v refused, as GCS answers it, or nil if v admits it:
// a bucket over its rate is 429 rateLimitExceeded in the usageLimits
// domain (gRPC RESOURCE_EXHAUSTED) or 503 backendError (UNAVAILABLE); an
// object name over its own rate is 429 with GCS's message for it, which
// names the object, so that a client can tell the two apart.
func CapacityError(v capacity.Verdict, bucket, object string) error {
	var e *store.Error
	switch v {
	case capacity.RateLimited:
		e = store.Errorf(store.KindRateLimited, "The bucket %s exceeded the rate limit for object writes (create, update, and delete). Please reduce your request rate. See https://cloud.google.com/storage/docs/gcs429.", bucket)
	case capacity.Unavailable:
		return store.Errorf(store.KindUnavailable, "The bucket %s is over its write capacity and the service is unavailable for this write. Please retry with exponential backoff.", bucket)
	case capacity.ObjectRateLimited:
		e = store.Errorf(store.KindRateLimited, "The object %s/%s exceeded the rate limit for object mutation operations (create, update, and delete). Please reduce your request rate. See https://cloud.google.com/storage/docs/gcs429.", bucket, object)
	default:
		return nil
	}
	e.Domain = "usageLimits"
	return e
}
