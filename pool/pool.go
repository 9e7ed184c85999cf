// Package pool provides the chunk buffers of an upload: byte slices whose size
// is a multiple of the 256 KiB GCS chunk quantum, and the Allocator interface
// through which the rest of the SDK obtains and returns them.
//
// Two allocators are provided:
//
//   - Pool recycles buffers through a sync.Pool and can enforce a byte budget,
//     so that a process has a memory ceiling however many uploads run at once.
//     Default returns a process-wide Pool of Quantum-sized buffers.
//   - Fixed hands out slots of one buffer supplied by the caller and never
//     allocates.
//
// Callers may plug in their own Allocator.
//
// # Ownership
//
// A buffer returned by Get belongs to the caller of Get until the caller hands
// it to Put. After Put the caller must not read, write or keep the buffer or
// the *[]byte that points to it: the allocator may hand it to someone else at
// once. Put takes the *[]byte exactly as Get returned it.
//
// Buffers are not zeroed: Get may return memory that holds the bytes of a
// previous user.
package pool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// Quantum is the GCS chunk quantum: every chunk of a resumable upload except
// the last must be a multiple of it. Pool buffer sizes are multiples of
// Quantum.
const Quantum = 256 << 10

// Allocator hands out chunk buffers of one size.
//
// Get returns a buffer b with len(*b) == BufferSize(), blocking if the
// allocator has a limit and it is reached. If ctx is done before a buffer is
// available, Get returns ctx.Err() and changes nothing. The caller of Get owns
// the buffer until it passes the same pointer to Put; after Put it must not
// use it again. Put returns an error, and keeps the allocator intact, if b is
// not a buffer the allocator handed out or was already put back.
// The memory returned by Get is not zeroed.
//
// BufferSize returns the length of every buffer that Get returns; it does not
// change over the life of the allocator.
//
// Implementations must be safe for concurrent use.
type Allocator interface {
	Get(ctx context.Context) (*[]byte, error)
	Put(b *[]byte) error
	BufferSize() int
}

// Errors returned by Put. They are returned wrapped with details: test them
// with errors.Is.
var (
	// ErrForeignBuffer reports a Put of nil, of a buffer of the wrong
	// size, or of a buffer the allocator did not hand out.
	ErrForeignBuffer = errors.New("pool: buffer was not handed out by this allocator")
	// ErrDoublePut reports a Put of a buffer that was already put back.
	ErrDoublePut = errors.New("pool: buffer was already put back")
)

var errNilContext = errors.New("pool: nil context")

var (
	_ Allocator = (*Pool)(nil)
	_ Allocator = (*Fixed)(nil)
)

// Pool is an Allocator that recycles buffers through a sync.Pool. Buffers are
// allocated when the sync.Pool has none to give back, and the garbage collector
// may free idle ones.
//
// With a budget (WithBudget), Get blocks while the bytes handed out and not
// yet put back would exceed the budget, so the budget bounds the memory held
// in buffers by callers.
//
// Put detects double puts cheaply: a buffer in the pool has length 0 and Get
// restores its full length, so Put of a pointer whose slice has length 0 is
// rejected with ErrDoublePut. The detection has limits: a second Put that
// comes after the pool has handed the same buffer out again, or that runs
// concurrently with the first, is not detected. Callers therefore must not
// set *b to length 0. Any other reslicing that keeps the capacity is accepted.
// A buffer of the right capacity that the pool did not hand out is accepted
// (adopted) while buffers are outstanding, and rejected with ErrForeignBuffer
// when none is; whatever the misuse, the pool's accounting never goes below
// zero and the budget never grows.
//
// The zero Pool is ready to use: it hands out Quantum-sized buffers without a
// budget. A Pool must not be copied after first use. All methods are safe for
// concurrent use.
type Pool struct {
	size int                 // buffer size; 0 means Quantum
	sem  *semaphore.Weighted // nil without a budget
	pool sync.Pool           // of *[]byte with len 0 and cap size

	gets, news, puts, rejected, budgetWaits atomic.Uint64
	inUse                                   atomic.Int64
}

// Stats is a snapshot of a Pool's counters.
type Stats struct {
	Gets        uint64 // successful Get calls
	News        uint64 // buffers allocated because none was pooled
	Puts        uint64 // accepted Put calls
	Rejected    uint64 // Put calls rejected with an error
	BudgetWaits uint64 // Get calls that had to wait for the budget
	InUseBytes  int64  // bytes handed out and not yet put back
}

// Option configures a Pool. Options are created by the With functions of this
// package.
type Option interface {
	apply(*config)
}

type config struct {
	size      int
	budget    int64
	hasBudget bool
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithBufferSize sets the size of the pool's buffers. n must be a positive
// multiple of Quantum. The default is Quantum.
func WithBufferSize(n int) Option {
	return optionFunc(func(c *config) { c.size = n })
}

// WithBudget sets a ceiling, in bytes, on the buffers handed out and not yet
// put back: Get blocks while one more buffer would exceed it. The budget must
// hold at least one buffer; a budget that is not a multiple of the buffer size
// admits floor(bytes/size) buffers. Without this option there is no ceiling.
func WithBudget(bytes int64) Option {
	return optionFunc(func(c *config) { c.budget, c.hasBudget = bytes, true })
}

// New returns a Pool configured by opts. It returns an error if the buffer
// size is not a positive multiple of Quantum, or if a budget is set that is
// smaller than one buffer. Nil options are ignored.
func New(opts ...Option) (*Pool, error) {
	c := config{size: Quantum}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if c.size <= 0 || c.size%Quantum != 0 {
		return nil, fmt.Errorf("pool: buffer size %d is not a positive multiple of %d (Quantum)", c.size, Quantum)
	}
	p := &Pool{size: c.size}
	if c.hasBudget {
		if c.budget < int64(c.size) {
			return nil, fmt.Errorf("pool: budget of %d bytes is smaller than one buffer of %d bytes", c.budget, c.size)
		}
		p.sem = semaphore.NewWeighted(c.budget)
	}
	return p, nil
}

var defaultPool Pool

// Default returns the process-wide Pool of Quantum-sized buffers, without a
// budget. It is the zero Pool, so it costs nothing until it is used.
func Default() *Pool { return &defaultPool }

// BufferSize returns the length of the buffers that Get returns.
func (p *Pool) BufferSize() int {
	if p.size == 0 {
		return Quantum
	}
	return p.size
}

// Get returns a buffer of BufferSize bytes, owned by the caller until it is
// passed to Put. The memory is not zeroed. With a budget, Get blocks while the
// budget is exhausted. If ctx is done, Get returns ctx.Err() and leaves the
// pool unchanged, even if a buffer was available.
func (p *Pool) Get(ctx context.Context) (*[]byte, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	size := p.BufferSize()
	if p.sem != nil && !p.sem.TryAcquire(int64(size)) {
		p.budgetWaits.Add(1)
		if err := p.sem.Acquire(ctx, int64(size)); err != nil {
			return nil, err
		}
	}
	// inUse grows after the semaphore and shrinks before it (see Put), so
	// the semaphore always holds at least inUse bytes.
	p.inUse.Add(int64(size))
	p.gets.Add(1)
	if b, _ := p.pool.Get().(*[]byte); b != nil {
		*b = (*b)[:size]
		return b, nil
	}
	p.news.Add(1)
	buf := make([]byte, size)
	return &buf, nil
}

// Put returns b to the pool. The caller must not use b afterwards. Put does
// not allocate and does not zero the memory. It returns an error wrapping
// ErrForeignBuffer if b is nil, has the wrong capacity, or no buffer is
// outstanding, and an error wrapping ErrDoublePut if b was already put back
// (see Pool for the limits of that check); a rejected buffer is left alone
// and the pool is unchanged.
func (p *Pool) Put(b *[]byte) error {
	size := p.BufferSize()
	switch {
	case b == nil:
		return p.reject(fmt.Errorf("%w: nil buffer", ErrForeignBuffer))
	case cap(*b) != size:
		return p.reject(fmt.Errorf("%w: capacity %d, want %d", ErrForeignBuffer, cap(*b), size))
	case len(*b) == 0:
		return p.reject(ErrDoublePut)
	}
	if p.inUse.Add(-int64(size)) < 0 {
		p.inUse.Add(int64(size))
		return p.reject(fmt.Errorf("%w: no buffer is outstanding", ErrForeignBuffer))
	}
	if p.sem != nil {
		p.sem.Release(int64(size))
	}
	p.puts.Add(1)
	*b = (*b)[:0]
	p.pool.Put(b)
	return nil
}

func (p *Pool) reject(err error) error {
	p.rejected.Add(1)
	return err
}

// Stats returns a snapshot of the pool's counters. The counters are read one
// by one, so a snapshot taken while other goroutines use the pool may mix
// moments.
func (p *Pool) Stats() Stats {
	return Stats{
		Gets:        p.gets.Load(),
		News:        p.news.Load(),
		Puts:        p.puts.Load(),
		Rejected:    p.rejected.Load(),
		BudgetWaits: p.budgetWaits.Load(),
		InUseBytes:  p.inUse.Load(),
	}
}
