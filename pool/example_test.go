package pool_test

import (
	"context"
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

	if err := p.Put(b); err != nil { // b must not be used after this
		panic(err)
	}
	fmt.Println(p.Put(b)) // a second Put is rejected
	fmt.Println(p.Stats().InUseBytes)
	// Output:
	// hello 262144
	// 262144
	// pool: buffer was already put back
	// 0
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
	if err := f.Put(b); err != nil {
		panic(err)
	}

	// A buffer shorter than Quantum is a single slot of its own size.
	small, _ := pool.NewFixed(make([]byte, 1000))
	fmt.Println(small.Slots(), small.BufferSize())
	// Output:
	// 3 262144
	// x
	// 1 1000
}
