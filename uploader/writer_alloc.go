package uploader

import (
	"context"
	"fmt"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/pool"
)

// allocator returns where the Writer's chunk buffers come from, and gives
// its chunker their size: the caller's buffer (WithBuffer), the client's
// pool (or a pool of the Writer's chunk size), behind the tenant's share
// when tenants are limited or the pool's default share applies.
func (w *Writer) allocator(ctx context.Context) (pool.Allocator, error) {
	alloc := w.client().alloc
	switch {
	case w.cfg.hasBuffer:
		f, err := pool.NewFixed(w.cfg.buffer)
		if err != nil {
			return nil, fmt.Errorf("WithBuffer: %w", err)
		}
		alloc = f
	case w.cfg.chunkSize != 0 && w.cfg.chunkSize != alloc.BufferSize():
		alloc = w.client().poolFor(w.cfg.chunkSize)
	}
	var chOpts []chunker.Option
	if w.cfg.knob.MD5 {
		chOpts = append(chOpts, chunker.WithMD5())
	}
	if err := w.ch.Reset(alloc.BufferSize(), chOpts...); err != nil {
		return nil, err
	}
	if t := &w.client().tenants; !w.cfg.hasBuffer && (t.limited() || t.share0 > 0 && alloc == w.client().alloc) {
		if b := t.limits.Bytes; b > 0 && b < int64(alloc.BufferSize()) {
			return nil, fmt.Errorf("chunk size %d is over the tenant byte limit of %d", alloc.BufferSize(), b)
		}
		if id := tenantOf(ctx); t.limited() || id != "" {
			s := t.share(id)
			ta := &tenantAlloc{Allocator: alloc, share: s, ev: &w.ev}
			if t.limits.Bytes > 0 || alloc == w.client().alloc {
				// The default share bounds the buffers of the
				// client's pool only.
				ta.bytes = s.bytes
			}
			alloc = ta
		}
	}
	return alloc, nil
}
