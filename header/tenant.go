package header

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc/metadata"
)

// TenantKey is the metadata key that carries the tenant ID. It is the
// X-Scope-OrgID header of Cortex, Mimir and Loki.
const TenantKey = "x-scope-orgid"

// MaxTenantLen is the longest tenant ID WithTenant accepts, in bytes: the
// limit Cortex, Mimir and Loki set.
const MaxTenantLen = 150

// WithTenant returns a copy of ctx whose header chain ends with the pair
// TenantKey, id. It appends nothing and returns ctx unchanged with an error
// unless id is a tenant ID as Cortex, Mimir and Loki define it:
//
//   - 1 to MaxTenantLen bytes;
//   - only the characters 0-9 a-z A-Z ! - _ . * ' ( );
//   - not "." or "..".
//
// Such an ID is a valid header value over gRPC and HTTP alike, with no
// whitespace that a proxy might trim and no '|', which Mimir reads as a list
// of tenants. The ID is checked once, here; a context may hold several, and
// the last one wins (see [Tenant]).
func WithTenant(ctx context.Context, id string) (context.Context, error) {
	if err := checkTenant(id); err != nil {
		return ctx, err
	}
	return appendPair(ctx, TenantKey, id), nil
}

func checkTenant(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("header: empty tenant ID")
	case len(id) > MaxTenantLen:
		return fmt.Errorf("header: tenant ID of %d bytes; the limit is %d", len(id), MaxTenantLen)
	case id == "." || id == "..":
		return fmt.Errorf("header: tenant ID %q is not allowed", id)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !tenantByte(c) {
			return fmt.Errorf("header: tenant ID has byte %#02x at %d; tenant IDs take 0-9 a-z A-Z ! - _ . * ' ( )", c, i)
		}
	}
	return nil
}

func tenantByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '!', '-', '_', '.', '*', '\'', '(', ')':
		return true
	}
	return false
}

// Tenant returns the tenant ID ctx carries: the last value of TenantKey in
// what OutgoingContext sends, whether it was set by WithTenant, Append or
// grpc's metadata functions. It reports false if there is none. It does not validate the
// value, and it copies nothing unless the tenant is only in gRPC metadata.
func Tenant(ctx context.Context) (string, bool) {
	for n := chain(ctx); n != nil; n = n.prev {
		for i := len(n.kv) - 2; i >= 0; i -= 2 {
			if n.kv[i] == TenantKey {
				return n.kv[i+1], true
			}
		}
	}
	if v := metadata.ValueFromOutgoingContext(ctx, TenantKey); len(v) > 0 {
		return v[len(v)-1], true
	}
	return "", false
}

// FromIncoming returns the last value of key in the incoming gRPC metadata of
// ctx, on the server side: with several values, the last one sent wins, as
// with Tenant on the client. It returns "" if the key is absent. The key is
// matched without regard to case. FromIncoming copies only the values of key
// (one allocation), never the whole metadata.
func FromIncoming(ctx context.Context, key string) string {
	v := metadata.ValueFromIncomingContext(ctx, strings.ToLower(key))
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}
