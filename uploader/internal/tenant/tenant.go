package tenant

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/semaphore"

	"github.com/objup/objup/header"
	"github.com/objup/objup/pool"
)

// Limits are the bounds of one tenant's share (see [github.com/objup/objup/uploader.TenantLimits]).
type Limits struct {
	Uploads int                     // uploads that hold buffers at once; 0: no bound
	Bytes   int64                   // bytes of buffers held at once; 0: the default share
	Weight  func(tenant string) int // a tenant's waiters in line at once; nil: 1
}

// Table is a client's table of tenant shares, made on a tenant's first
// wait (or first upload, with limits): about 200 bytes per tenant seen.
type Table struct {
	limits Limits
	share0 int64    // the default byte bound of a named tenant; 0: none
	m      sync.Map // tenant ID -> *Share
}

// NewTable returns the table of a client whose Writers take buffers of
// its allocator a, with limits l.
func NewTable(l Limits, a pool.Allocator) *Table {
	return &Table{limits: l, share0: defaultShare(a, a.BufferSize())}
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

// Share is one tenant's part of the client: its turn at the pool's
// waiting line and its limits.
type Share struct {
	turn    *semaphore.Weighted // its waiters in the pool's line: its weight
	uploads *semaphore.Weighted // nil without an upload limit
	bytes   *semaphore.Weighted // nil without a byte limit
}

// limited reports whether uploads go through an Alloc.
func (t *Table) limited() bool { return t.limits.Uploads > 0 || t.limits.Bytes > 0 }

// Share returns id's share, made on first use.
func (t *Table) Share(id string) *Share {
	if s, ok := t.m.Load(id); ok {
		return s.(*Share)
	}
	w := 1
	if t.limits.Weight != nil {
		w = max(t.limits.Weight(id), 1)
	}
	s := &Share{turn: semaphore.NewWeighted(int64(w))}
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
	return actual.(*Share)
}

// Wrap returns the allocator of an upload in ctx whose buffers come from
// a: a itself, or an Alloc counting them against the tenant's share when
// tenants are limited or the default share applies. shared says whether a
// is the client's own pool, which the default share bounds; ev is told of
// waits at a limit.
func (t *Table) Wrap(ctx context.Context, a pool.Allocator, shared bool, ev Events) (pool.Allocator, error) {
	if !t.limited() && (t.share0 == 0 || !shared) {
		return a, nil
	}
	if b := t.limits.Bytes; b > 0 && b < int64(a.BufferSize()) {
		return nil, fmt.Errorf("chunk size %d is over the tenant byte limit of %d", a.BufferSize(), b)
	}
	id := Of(ctx)
	if !t.limited() && id == "" {
		return a, nil
	}
	s := t.Share(id)
	ta := &Alloc{Allocator: a, share: s, ev: ev}
	if t.limits.Bytes > 0 || shared {
		// The default share bounds the buffers of the client's pool only.
		ta.bytes = s.bytes
	}
	return ta, nil
}

// Of returns the tenant of an upload's context, "" if none.
func Of(ctx context.Context) string {
	id, _ := header.Tenant(ctx)
	return id
}

// TryGetter is an allocator that can hand out a buffer without waiting, as
// pool.Pool and pool.Fixed do.
type TryGetter interface {
	TryGet() (*[]byte, bool)
}

// FairGet takes a buffer from a, waiting in s's turn when none is free at
// once: the pool's line (a FIFO semaphore) then holds at most the weight of
// each tenant's waiters, so a tenant with a hundred waiters does not push
// one with a single waiter to the back.
func FairGet(ctx context.Context, a pool.Allocator, s *Share) (*[]byte, error) {
	if t, ok := a.(TryGetter); ok {
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
