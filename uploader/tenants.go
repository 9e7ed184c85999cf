package uploader

import (
	"context"
	"sync"

	"golang.org/x/sync/semaphore"
	"google.golang.org/api/option"

	"github.com/objup/objup/header"
	"github.com/objup/objup/pool"
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

// tenants is the client's table of tenant shares, made on a tenant's first
// wait (or first upload, with limits): about 200 bytes per tenant seen.
type tenants struct {
	limits TenantLimits
	share0 int64    // the default byte bound of a named tenant (TenantLimits.Bytes); 0: none
	m      sync.Map // tenant ID -> *tenantShare
}

// reserveDiv sets the part of a pool's budget that one tenant leaves to
// the others by default: 1/reserveDiv.
const reserveDiv = 8

// defaultShare returns the default byte bound of a named tenant on a
// client whose Writers take chunkSize-byte buffers from a: the budget less
// its reserve in whole chunks, or 0 (no bound) without a budget or when
// the reserve is less than a chunk.
func defaultShare(a pool.Allocator, chunkSize int) int64 {
	p, ok := a.(*pool.Pool)
	if !ok {
		return 0
	}
	budget, ok := p.Budget()
	reserve := budget / reserveDiv / int64(chunkSize) * int64(chunkSize)
	if !ok || reserve == 0 {
		return 0
	}
	return budget - reserve
}

// tenantShare is one tenant's part of the client: its turn at the pool's
// waiting line and its limits.
type tenantShare struct {
	turn    *semaphore.Weighted // its waiters in the pool's line: its weight
	uploads *semaphore.Weighted // nil without an upload limit
	bytes   *semaphore.Weighted // nil without a byte limit
}

// limited reports whether uploads go through tenantAlloc.
func (t *tenants) limited() bool { return t.limits.Uploads > 0 || t.limits.Bytes > 0 }

// share returns id's share, made on first use.
func (t *tenants) share(id string) *tenantShare {
	if s, ok := t.m.Load(id); ok {
		return s.(*tenantShare)
	}
	w := 1
	if t.limits.Weight != nil {
		w = max(t.limits.Weight(id), 1)
	}
	s := &tenantShare{turn: semaphore.NewWeighted(int64(w))}
	if n := t.limits.Uploads; n > 0 {
		s.uploads = semaphore.NewWeighted(int64(n))
	}
	n := t.limits.Bytes
	if n == 0 && id != "" {
		n = t.share0
	}
	if n > 0 {
		s.bytes = semaphore.NewWeighted(n)
	}
	actual, _ := t.m.LoadOrStore(id, s)
	return actual.(*tenantShare)
}

// tenantOf returns the tenant of an upload's context, "" if none.
func tenantOf(ctx context.Context) string {
	id, _ := header.Tenant(ctx)
	return id
}

// fairGet takes a buffer from a, waiting in s's turn when none is free at
// once: the pool's line (a FIFO semaphore) then holds at most the weight of
// each tenant's waiters, so a tenant with a hundred waiters does not push
// one with a single waiter to the back.
func fairGet(ctx context.Context, a pool.Allocator, s *tenantShare) (*[]byte, error) {
	if t, ok := a.(tryGetter); ok {
		if b, ok := t.TryGet(); ok {
			return b, nil
		}
	}
	if err := s.turn.Acquire(ctx, 1); err != nil {
		return nil, err
	}
	defer s.turn.Release(1)
	return a.Get(ctx)
}

// tenantAlloc is a Writer's allocator when the client has tenant limits:
// the client's allocator, with the buffers and the upload counted against
// the tenant's share.
type tenantAlloc struct {
	pool.Allocator
	share *tenantShare
	bytes *semaphore.Weighted // the tenant's byte bound that applies here, or nil
	ev    *uploadEvents
	slot  bool // the upload holds one of the tenant's upload slots
}

// acquire takes n of sem, at once or after a wait that is reported as a
// limit wait.
func (a *tenantAlloc) acquire(ctx context.Context, sem *semaphore.Weighted, n int64) error {
	if sem.TryAcquire(n) {
		return nil
	}
	a.ev.LimitWait()
	return sem.Acquire(ctx, n)
}

// Get takes the upload's slot (first time only) and the buffer's bytes of
// the tenant's limits, then a buffer in the tenant's turn.
func (a *tenantAlloc) Get(ctx context.Context) (*[]byte, error) {
	if a.share.uploads != nil && !a.slot {
		if err := a.acquire(ctx, a.share.uploads, 1); err != nil {
			return nil, err
		}
		a.slot = true
	}
	size := int64(a.BufferSize())
	if a.bytes != nil {
		if err := a.acquire(ctx, a.bytes, size); err != nil {
			return nil, err
		}
	}
	b, err := fairGet(ctx, a.Allocator, a.share)
	if err != nil && a.bytes != nil {
		a.bytes.Release(size)
	}
	return b, err
}

// TryGet is Get without any wait.
func (a *tenantAlloc) TryGet() (*[]byte, bool) {
	t, ok := a.Allocator.(tryGetter)
	if !ok {
		return nil, false
	}
	if a.share.uploads != nil && !a.slot {
		if !a.share.uploads.TryAcquire(1) {
			return nil, false
		}
		a.slot = true
	}
	size := int64(a.BufferSize())
	if a.bytes != nil && !a.bytes.TryAcquire(size) {
		return nil, false
	}
	b, ok := t.TryGet()
	if !ok && a.bytes != nil {
		a.bytes.Release(size)
	}
	return b, ok
}

// Put gives the buffer back and its bytes to the tenant's limit. gRPC and
// net/http call it from their goroutines.
func (a *tenantAlloc) Put(b *[]byte) {
	a.Allocator.Put(b)
	if a.bytes != nil {
		a.bytes.Release(int64(a.BufferSize()))
	}
}

// done gives back the upload's slot, once its buffers are back.
func (a *tenantAlloc) done() {
	if a.slot {
		a.slot = false
		a.share.uploads.Release(1)
	}
}
