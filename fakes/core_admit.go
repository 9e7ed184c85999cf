package fakes

import (
	"github.com/objup/objup/fakes/internal/api"
)

// admit counts one write of object to bucket by tenant against the
// bucket's capacity. A write to a bucket that does not exist, or of a name
// GCS refuses, is not counted: the call answers that error itself.
func (s *Server) admit(bucket, object, tenant string) error {
	if s.limiter == nil {
		return nil
	}
	if _, err := s.store.Bucket(bucket); err != nil {
		return nil
	}
	if api.CheckObjectName(object) != nil {
		return nil
	}
	return api.CapacityError(s.limiter.Admit(bucket, object, tenant), bucket, object)
}
