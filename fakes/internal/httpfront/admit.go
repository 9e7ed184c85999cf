package httpfront

import (
	"net/http"

	"github.com/objup/objup/header"
)

// admitHTTP is admitGRPC for a JSON API request.
func (s *Server) admitHTTP(r *http.Request, bucket, object string) error {
	if s.Limiter == nil {
		return nil
	}
	return s.Admit(bucket, object, lastValue(r.Header, header.TenantKey))
}
