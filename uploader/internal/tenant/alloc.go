package tenant

import (
	"context"

	"golang.org/x/sync/semaphore"

	"github.com/objup/objup/pool"
)

// Events is told of an upload's waits at its tenant's limits.
type Events interface{ LimitWait() }

// Alloc is a Writer's allocator when its tenant's share bounds it: the
// client's allocator, with the buffers and the upload counted against the
// share. Its Get, TryGet and Done run on the Writer's goroutine; Put on
// any.
type Alloc struct {
	pool.Allocator
	share *Share
	bytes *semaphore.Weighted // the tenant's byte bound that applies here, or nil
	ev    Events
	slot  bool // the upload holds one of the tenant's upload slots
}

// acquire takes n of sem, at once or after a wait that is reported as a
// limit wait.
func (a *Alloc) acquire(ctx context.Context, sem *semaphore.Weighted, n int64) error {
	if sem.TryAcquire(n) {
		return nil
	}
	a.ev.LimitWait()
	return sem.Acquire(ctx, n)
}

// Get takes the upload's slot (first time only) and the buffer's bytes of
// the tenant's limits, then a buffer in the tenant's turn.
func (a *Alloc) Get(ctx context.Context) (*[]byte, error) {
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
	b, err := FairGet(ctx, a.Allocator, a.share)
	if err != nil && a.bytes != nil {
		a.bytes.Release(size)
	}
	return b, err
}

// Bounded reports whether a tenant's byte bound applies to the upload.
func (a *Alloc) Bounded() bool { return a.bytes != nil }

// TryGet is Get without any wait.
func (a *Alloc) TryGet() (*[]byte, bool) {
	t, ok := a.Allocator.(TryGetter)
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
func (a *Alloc) Put(b *[]byte) {
	a.Allocator.Put(b)
	if a.bytes != nil {
		a.bytes.Release(int64(a.BufferSize()))
	}
}

// Done gives back the upload's slot, once its buffers are back.
func (a *Alloc) Done() {
	if a.slot {
		a.slot = false
		a.share.uploads.Release(1)
	}
}
