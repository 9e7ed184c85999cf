package pool_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/objup/objup/pool"
)

func Example() {
	// A pool of 256 KiB buffers that never holds more than 1 MiB in use.
	p, err := pool.New(pool.WithBudget(4 * pool.Quantum))
	if err != nil {
		panic(err)
	}
	b, err := p.Get(context.Background()) // blocks while 1 MiB is in use
	if err != nil {
		panic(err)
	}
	n := copy(*b, "hello") // the caller owns *b until Put
	fmt.Println(string((*b)[:n]), len(*b))
	fmt.Println(p.Stats().InUseBytes)

	p.Put(b) // b must not be used after this
	st := p.Stats()
	fmt.Println(st.Gets, st.Puts, st.InUseBytes)
	// Output:
	// hello 262144
	// 262144
	// 1 1 0
}

// A second Put of the same buffer is a programming error: Put panics with an
// error that wraps ErrDoublePut, and the pool stays as it was. (Recovering is
// for the demonstration; a program should fix the double Put.)
func ExamplePool_Put() {
	var p pool.Pool // the zero Pool works: Quantum-sized buffers, no budget
	b, err := p.Get(context.Background())
	if err != nil {
		panic(err)
	}
	p.Put(b)

	func() {
		defer func() {
			err, _ := recover().(error)
			fmt.Println(errors.Is(err, pool.ErrDoublePut))
			fmt.Println(err)
		}()
		p.Put(b)
	}()
	st := p.Stats()
	fmt.Println(st.Puts, st.Rejected, st.InUseBytes)
	// Output:
	// true
	// pool: buffer was already put back: Put of a buffer of length 0, as the pool leaves a buffer it takes back
	// 1 1 0
}

func ExampleNewFixed() {
	// The caller's own memory, cut into Quantum-sized slots.
	mine := make([]byte, 3*pool.Quantum+10)
	f, err := pool.NewFixed(mine)
	if err != nil {
		panic(err)
	}
	fmt.Println(f.Slots(), f.BufferSize())

	b, err := f.Get(context.Background())
	if err != nil {
		panic(err)
	}
	(*b)[0] = 'x'
	fmt.Println(string(mine[0]))
	f.Put(b) // the slot is free again; mine is the caller's once all slots are

	// A buffer shorter than Quantum is a single slot of its own size.
	small, _ := pool.NewFixed(make([]byte, 1000))
	fmt.Println(small.Slots(), small.BufferSize())
	// Output:
	// 3 262144
	// x
	// 1 1000
}
