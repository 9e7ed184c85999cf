package calls

import (
	"strings"

	"github.com/objup/objup/fakes/internal/core"
)

// roleOf returns the role of the request whose authorization value is
// auth, and whether the server knows its token.
func (s *Layer) RoleOf(auth string) (core.Role, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(auth), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return 0, false
	}
	r, ok := s.Creds[strings.TrimSpace(tok)]
	return r, ok
}
