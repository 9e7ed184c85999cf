package core

import (
	"github.com/objup/objup/fakes/internal/api"
)

// admit counts one write of object to bucket by tenant against the
// bucket's capacity. A write to a bucket that does not exist, or of a name
// GCS refuses, is not counted: the call answers that error itself.
func (s *Core) Admit(bucket, object, tenant string) error {
	if s.Limiter == nil {
		return nil
	}
	if _, err := s.Store.Bucket(bucket); err != nil {
		return nil
	}
	if api.CheckObjectName(object) != nil {
		return nil
	}
	return api.CapacityError(s.Limiter.Admit(bucket, object, tenant), bucket, object)
}
