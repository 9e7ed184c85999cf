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
	if w.cfg.hasBuffer {
		return alloc, nil
	}
	return w.client().tenants.Wrap(ctx, alloc, alloc == w.client().alloc, &w.ev)
}
