package pool

import (
	"context"
	"errors"
	"sync/atomic"
)

// Fixed is an Allocator over one buffer supplied by the caller, cut into
// slots. It never allocates in Get or Put and never reads or writes the
// buffer's memory: it only hands out slices of it.
//
// A buffer of at least Quantum bytes is cut into floor(len/Quantum) slots of
// Quantum bytes each; trailing bytes are not used. A shorter buffer is a
// single slot of its own length, which suits only objects that fit in it.
//
// Get blocks until a slot is free. Put identifies the slot by the pointer
// that Get returned, whatever slice it points to now, and panics on misuse
// (see the package doc): with an error wrapping ErrForeignBuffer for nil or
// any pointer that is not one of f's slots (a copy of the *[]byte, another
// allocator's buffer), and ErrDoublePut for a slot that is already free. A
// second Put that comes after the slot was handed out again is not detected.
// After Put, the slot's slice has length 0.
//
// The caller keeps ownership of the buffer itself: it must not use the memory
// of a slot while the slot is handed out, and must not reuse the buffer for
// anything else until every slot has been put back.
//
// A Fixed must be created with NewFixed. Its methods are safe for concurrent
// use.
type Fixed struct {
	buf   []byte
	size  int
	slots [][]byte // the slice of each slot; Get returns &slots[i]
	index map[*[]byte]int
	out   []atomic.Bool // slot handed out
	free  chan int      // indexes of free slots
}

var errNoFixed = errors.New("pool: Fixed not created with NewFixed")

// NewFixed returns a Fixed over buf. It returns an error if buf is empty.
// The caller must not use buf while slots of it are handed out.
func NewFixed(buf []byte) (*Fixed, error) {
	if len(buf) == 0 {
		return nil, errors.New("pool: NewFixed needs a non-empty buffer")
	}
	size, n := len(buf), 1
	if len(buf) >= Quantum {
		size, n = Quantum, len(buf)/Quantum
	}
	f := &Fixed{
		buf:   buf[: size*n : size*n],
		size:  size,
		slots: make([][]byte, n),
		index: make(map[*[]byte]int, n),
		out:   make([]atomic.Bool, n),
		free:  make(chan int, n),
	}
	for i := range n {
		f.index[&f.slots[i]] = i
		f.free <- i
	}
	return f, nil
}

// BufferSize returns the length of the slots: Quantum, or the length of the
// buffer if it is shorter than Quantum.
func (f *Fixed) BufferSize() int { return f.size }

// Get returns a free slot, a slice of the caller's buffer of BufferSize bytes
// whose capacity ends at the slot's end. The caller of Get owns the slot
// until it passes it to Put. Get blocks until a slot is free; if ctx is done
// first (or already), it returns ctx.Err() and leaves f unchanged.
func (f *Fixed) Get(ctx context.Context) (*[]byte, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	if f.free == nil {
		return nil, errNoFixed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var i int
	select {
	case i = <-f.free:
	default:
		select {
		case i = <-f.free:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return f.take(i), nil
}

// TryGet is Get without waiting: it returns a free slot and true, or nil and
// false if none is free.
func (f *Fixed) TryGet() (*[]byte, bool) {
	if f.free == nil {
		return nil, false
	}
	select {
	case i := <-f.free:
		return f.take(i), true
	default:
		return nil, false
	}
}

// take hands out slot i.
func (f *Fixed) take(i int) *[]byte {
	lo, hi := i*f.size, (i+1)*f.size
	f.slots[i] = f.buf[lo:hi:hi]
	f.out[i].Store(true)
	return &f.slots[i]
}

// Put frees the slot b, which the caller must not use afterwards. It panics
// with an error wrapping ErrForeignBuffer if b is not a pointer returned by
// f.Get, and ErrDoublePut if the slot is already free; f is then unchanged.
func (f *Fixed) Put(b *[]byte) {
	if b == nil {
		panic(misuse(ErrForeignBuffer, "Put of a nil *[]byte into a Fixed"))
	}
	i, ok := f.index[b]
	if !ok {
		panic(misuse(ErrForeignBuffer, "Put of a *[]byte that is not one of the Fixed's slots (only the pointer Get returned is)"))
	}
	if !f.out[i].CompareAndSwap(true, false) {
		panic(misuse(ErrDoublePut, "Put of slot %d of a Fixed, which is free", i))
	}
	f.slots[i] = f.slots[i][:0]
	f.free <- i
}
