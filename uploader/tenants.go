package uploader

import (
	"google.golang.org/api/option"
)

// TenantLimits bounds what one tenant (header.WithTenant, Item.Tenant) may
// hold of a client at once, and weighs the tenants' turns at the pool's
// budget. A tenant at a limit waits, as long as its context allows, and
// never fails for it; other tenants go on. Uploads without a tenant share
// the limits of the tenant "".
type TenantLimits struct {
	// Uploads bounds one tenant's uploads that hold chunk buffers at once
	// (from their first buffer to their end); 0 is no bound.
	Uploads int
	// Bytes bounds the chunk buffers one tenant holds at once. It must
	// hold at least one chunk of the client's chunk size. 0 is the default
	// share: on a client whose pool has a budget (WithPool, pool.WithBudget),
	// a named tenant holds at most the budget less an eighth of it (rounded
	// down to whole chunks, when that is at least one chunk), so that a
	// tenant's burst always leaves buffers free for the others, which would
	// otherwise wait for buffers that come back only as the service
	// acknowledges them; without a budget, or for uploads without a tenant,
	// no bound. math.MaxInt64 is no bound at all.
	Bytes int64
	// Weight returns a tenant's weight: when the pool's budget is spent,
	// waiting uploads are served tenant by tenant, and a tenant of weight
	// w has w of its waiters in line at once (at least 1). nil weighs every
	// tenant 1. It must be safe for concurrent use.
	Weight func(tenant string) int
	// Writes bounds one tenant's object writes per second (one-shot
	// uploads, session starts, composes, deletes of temporary objects), in
	// bursts of at most a tenth of a second of them (at least one); 0 is no
	// bound. A tenant at its rate waits, as its context allows, and never
	// fails for it. The weights also share a bucket that pushed back (see
	// experimental.WithoutAdmission): a tenant of weight w gets w writes a turn.
	Writes float64
}

// WithTenantLimits sets per-tenant limits and weights (see TenantLimits).
// Without it, tenants are still served in turn when the pool's budget is
// spent, each with weight 1, and hold at most the default share of the
// budget (see TenantLimits.Bytes).
func WithTenantLimits(l TenantLimits) option.ClientOption {
	return newClientOption(func(c *clientConfig) { c.tenantLimits = l })
}
