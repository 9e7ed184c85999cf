package fakes

import (
	"fmt"
)

// WithCredential makes the server hold requests that carry the bearer
// token to role: a request whose token is token ("authorization: Bearer
// TOKEN", as gRPC metadata or an HTTP header) may do only what role's
// permissions allow, and is refused otherwise with HTTP 403 and GCS's
// JSON error body (reason "forbidden") or codes.PermissionDenied, having
// done nothing. A request with no token, or a token no WithCredential
// names, keeps full access. Giving a token again replaces its role. See
// docs/fake/roles.md for what each method needs. token
// must not be empty and role must be valid: [New] reports them.
func WithCredential(token string, role Role) Option {
	return optionFunc(func(c *config) {
		if c.creds == nil {
			c.creds = make(map[string]Role)
		}
		c.creds[token] = role
	})
}

// validateCreds reports the problems of the credentials in c.
func (c *config) validateCreds() []string {
	var errs []string
	for tok, r := range c.creds {
		if tok == "" {
			errs = append(errs, "credential: empty token")
		}
		if !r.Valid() {
			errs = append(errs, fmt.Sprintf("credential %q: invalid role %v", tok, r))
		}
	}
	return errs
}
