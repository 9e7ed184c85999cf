package fakes

import (
	"net/http"

	"github.com/objup/objup/header"
)

// admitHTTP is admitGRPC for a JSON API request.
func (s *Server) admitHTTP(r *http.Request, bucket, object string) error {
	if s.limiter == nil {
		return nil
	}
	return s.admit(bucket, object, lastValue(r.Header, header.TenantKey))
}
