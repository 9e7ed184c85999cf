package mode

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader/internal/tenant"
	"github.com/objup/objup/uploader/internal/xfer"
)

// starvingSet is a pool's multipart uploads that wait for a buffer with a
// part partly filled and none of their parts in flight: a part smaller
// than 5 MiB cannot go out (but the last), so what they hold comes back
// only once they get more. They wait while something else holds buffers
// of the pool (a session, a part in flight, another upload), which come
// back; once they hold all the pool handed out, none can go on, and the
// one that finds it fails, giving its buffers back.
type starvingSet struct {
	mu   sync.Mutex
	held int64         // bytes the starving uploads hold
	wake chan struct{} // closed when held changes
}

// starving are the starving uploads by pool.
var starving sync.Map // *pool.Pool -> *starvingSet

// starve waits for a buffer for the part being filled, which is too small
// to go out, while no part of p is in flight (see starvingSet). It fails
// at once with ResourceExhausted when the pool's budget cannot be shared
// so (a pool that is not the client's own, a tenant's byte bound).
func (p *parallel) starve() (*[]byte, error) {
	h := &p.Params
	u := h.Request
	held := int64(len(p.cur.refs)) * int64(h.Chunker.ChunkSize())
	fail := func() error {
		return &xfer.OpError{Op: xfer.MultipartNames.Part, Bucket: u.Bucket, Object: u.Object, Code: codes.ResourceExhausted,
			Err: fmt.Errorf("the pool's budget is held by multipart uploads whose parts are not yet 5 MiB (this one holds %d bytes of its part): give the pool a larger budget, or fewer uploads at once", held)}
	}
	alloc := u.Life.Alloc
	if t, ok := alloc.(*tenant.Alloc); ok {
		if t.Bounded() {
			return nil, fail()
		}
		alloc = t.Allocator
	}
	pl, ok := alloc.(*pool.Pool)
	if !ok {
		return nil, fail()
	}
	budget, bounded := pl.Budget()
	v, _ := starving.LoadOrStore(pl, &starvingSet{wake: make(chan struct{})})
	set := v.(*starvingSet)
	// look counts this upload in (or out) of the starving ones, under the
	// set's lock, and reports whether they hold all the pool handed out:
	// the first to find it takes itself out at once, so that the others,
	// woken to look again, do not fail for the same bytes.
	in := false
	look := func(enter bool) (stuck bool, wake chan struct{}) {
		set.mu.Lock()
		defer set.mu.Unlock()
		changed := false
		if enter {
			set.held += held
			in, changed = true, true
		}
		// Stuck: the starving uploads hold all the pool handed out, and
		// the pool has no buffer left to hand out (one put back since
		// the wait began would be taken by the next wait).
		inUse := pl.Stats().InUseBytes
		stuck = in && inUse <= set.held && (!bounded || inUse+int64(pl.BufferSize()) > budget)
		if stuck || !enter && !in {
			if in {
				set.held -= held
				in, changed = false, true
			}
		}
		if changed {
			close(set.wake)
			set.wake = make(chan struct{})
		}
		return stuck, set.wake
	}
	defer func() {
		set.mu.Lock()
		defer set.mu.Unlock()
		if in {
			set.held -= held
			close(set.wake)
			set.wake = make(chan struct{})
		}
	}()
	stuck, wake := look(true)
	for !stuck {
		ctx, cancel := context.WithCancel(p.ctx)
		go func() {
			select {
			case <-wake:
				cancel()
			case <-ctx.Done():
			}
		}()
		if b, done, err := p.waitBuffer(ctx, cancel); done {
			return b, err
		}
		// What the starving uploads hold changed: look again.
		stuck, wake = look(false)
	}
	return nil, fail()
}
