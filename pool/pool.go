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
// it to Put, exactly once. Ownership may pass from hand to hand in between (a
// chunker, a gRPC stream): whoever holds the buffer last puts it back. After
// Put nobody may read, write or keep the buffer or the *[]byte that points to
// it: the allocator may hand it to someone else at once. Put takes the *[]byte
// exactly as Get returned it.
//
// Buffers are not zeroed: Get may return memory that holds the bytes of a
// previous user.
//
// # Misuse
//
// Put panics on misuse: a buffer put back twice, or one that the allocator
// did not hand out. Either is a programming error of the caller, which could
// otherwise hand one buffer to two users at once and corrupt data silently;
// the panic gives a stack trace at the faulty Put instead. The panic value is
// an error wrapping ErrDoublePut or ErrForeignBuffer, so code that recovers
// can tell them apart with errors.Is. A Put that panics leaves the allocator
// as it was (a Pool only counts it, in Stats). The checks are cheap and have
// limits, which Pool and Fixed document: not every misuse is caught.
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
// the buffer until it passes the same pointer to Put, once; after Put it must
// not use it again. The memory returned by Get is not zeroed.
//
// Put takes a buffer back and cannot fail. A Put of a buffer that the
// allocator did not hand out, or that was already put back, is a programming
// error: an implementation that detects it panics with an error wrapping
// ErrForeignBuffer or ErrDoublePut, and leaves the allocator unchanged.
//
// BufferSize returns the length of every buffer that Get returns; it does not
// change over the life of the allocator.
//
// Implementations must be safe for concurrent use.
type Allocator interface {
	Get(ctx context.Context) (*[]byte, error)
	Put(b *[]byte)
	BufferSize() int
}

// The errors that a misused Put panics with. The panic value wraps one of
// them with details of what went wrong: test a recovered value with
// errors.Is.
var (
	// ErrForeignBuffer reports a Put of nil, of a buffer of the wrong
	// size, or of a buffer the allocator did not hand out.
	ErrForeignBuffer = errors.New("pool: buffer was not handed out by this allocator")
	// ErrDoublePut reports a Put of a buffer that was already put back.
	ErrDoublePut = errors.New("pool: buffer was already put back")
)

// misuse returns the panic value of a misused Put: an error that wraps kind
// (ErrForeignBuffer or ErrDoublePut) and says what happened.
func misuse(kind error, format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{kind}, args...)...)
}

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
// Put panics on misuse (see the package doc), and detects it cheaply, without
// a table of the buffers handed out:
//   - nil, or a buffer whose capacity is not the pool's buffer size:
//     ErrForeignBuffer.
//   - a double Put: a buffer in the pool has length 0 and Get restores its
//     full length, so a Put of a pointer whose slice has length 0 panics with
//     ErrDoublePut. A second Put that comes after the pool has handed the
//     same buffer out again, or that runs concurrently with the first, is not
//     detected. Callers therefore must not set *b to length 0; any other
//     reslicing that keeps the capacity is accepted.
//   - a buffer of the right capacity that the pool did not hand out is
//     accepted (adopted) while buffers are outstanding, and panics with
//     ErrForeignBuffer when none is.
//
// Whatever the misuse, the pool's accounting never goes below zero and the
// budget never grows; a Put that panics changes nothing but the Rejected
// count of Stats.
//
// The zero Pool is ready to use: it hands out Quantum-sized buffers without a
// budget. A Pool must not be copied after first use. All methods are safe for
// concurrent use.
type Pool struct {
	size   int                 // buffer size; 0 means Quantum
	sem    *semaphore.Weighted // nil without a budget
	budget int64               // with sem, the bytes it admits
	pool   sync.Pool           // of *[]byte with len 0 and cap size

	gets, news, puts, rejected, budgetWaits atomic.Uint64
	inUse                                   atomic.Int64
}

// Stats is a snapshot of a Pool's counters.
type Stats struct {
	Gets        uint64 // successful Get calls
	News        uint64 // buffers allocated because none was pooled
	Puts        uint64 // Put calls that took a buffer back
	Rejected    uint64 // Put calls that panicked on misuse (and were recovered)
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
		p.budget = c.budget / int64(c.size) * int64(c.size)
		p.sem = semaphore.NewWeighted(c.budget)
	}
	return p, nil
}

var defaultPool Pool

// Default returns the process-wide Pool of Quantum-sized buffers, without a
// budget. It is the zero Pool, so it costs nothing until it is used.
func Default() *Pool { return &defaultPool }

// Budget returns the bytes of buffers the pool hands out at most at once
// (WithBudget, rounded down to whole buffers), and false if it has no
// budget.
func (p *Pool) Budget() (int64, bool) { return p.budget, p.sem != nil }

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
	return p.take(size), nil
}

// TryGet is Get without waiting: it returns a buffer and true if one is
// available within the budget at once, and nil and false otherwise. An
// uploader uses it to learn that a Get would wait, so it can first send what
// it holds. It does not count as a budget wait.
func (p *Pool) TryGet() (*[]byte, bool) {
	size := p.BufferSize()
	if p.sem != nil && !p.sem.TryAcquire(int64(size)) {
		return nil, false
	}
	return p.take(size), true
}

// take hands out a buffer once the budget, if any, has room for it.
func (p *Pool) take(size int) *[]byte {
	// inUse grows after the semaphore and shrinks before it (see Put), so
	// the semaphore always holds at least inUse bytes.
	p.inUse.Add(int64(size))
	p.gets.Add(1)
	if b, _ := p.pool.Get().(*[]byte); b != nil {
		*b = (*b)[:size]
		return b
	}
	p.news.Add(1)
	buf := make([]byte, size)
	return &buf
}

// Put returns b to the pool, which owns it from then on: the caller must not
// use b afterwards. Put does not allocate and does not zero the memory.
//
// Put panics if b is nil, has the wrong capacity or no buffer is outstanding
// (an error wrapping ErrForeignBuffer), or if b was already put back (an
// error wrapping ErrDoublePut); see Pool for the limits of these checks. A
// Put that panics leaves b alone and the pool unchanged but for Stats'
// Rejected count.
func (p *Pool) Put(b *[]byte) {
	size := p.BufferSize()
	switch {
	case b == nil:
		p.reject(misuse(ErrForeignBuffer, "Put of a nil *[]byte"))
	case cap(*b) != size:
		p.reject(misuse(ErrForeignBuffer, "Put of a buffer of capacity %d into a pool of %d-byte buffers", cap(*b), size))
	case len(*b) == 0:
		p.reject(misuse(ErrDoublePut, "Put of a buffer of length 0, as the pool leaves a buffer it takes back"))
	}
	// Take the buffer's bytes off inUse only if they are there, so that a
	// foreign Put never makes inUse negative, not even for a moment that a
	// concurrent Put could see. The loop retries only when another Get or
	// Put changed inUse in between.
	for {
		n := p.inUse.Load()
		if n < int64(size) {
			p.reject(misuse(ErrForeignBuffer, "Put of a %d-byte buffer while %d bytes are handed out", size, n))
		}
		if p.inUse.CompareAndSwap(n, n-int64(size)) {
			break
		}
	}
	if p.sem != nil {
		p.sem.Release(int64(size))
	}
	p.puts.Add(1)
	*b = (*b)[:0]
	p.pool.Put(b)
}

// reject counts a misused Put and panics with err.
func (p *Pool) reject(err error) {
	p.rejected.Add(1)
	panic(err)
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
