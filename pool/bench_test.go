package pool_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/objup/objup/pool"
)

var sink []byte

// allocators are the Get/Put variants compared in the benchmarks; "make" is
// the baseline that allocates a fresh buffer per operation.
func benchAllocators(b *testing.B) []struct {
	name string
	a    pool.Allocator
} {
	budget, err := pool.New(pool.WithBudget(64 * pool.Quantum))
	if err != nil {
		b.Fatal(err)
	}
	fixed, err := pool.NewFixed(make([]byte, 8*pool.Quantum))
	if err != nil {
		b.Fatal(err)
	}
	return []struct {
		name string
		a    pool.Allocator
	}{
		{"pool", &pool.Pool{}},
		{"pool-budget", budget},
		{"fixed", fixed},
		{"make", nil},
	}
}

// BenchmarkGetPut measures one steady-state Get followed by Put of a
// Quantum-sized buffer. Compare with benchstat -col /impl.
func BenchmarkGetPut(b *testing.B) {
	ctx := context.Background()
	for _, tc := range benchAllocators(b) {
		b.Run("impl="+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			if tc.a == nil {
				for b.Loop() {
					sink = make([]byte, pool.Quantum)
				}
				return
			}
			warmUp(b, tc.a, 1)
			defer reportNews(b, tc.a)()
			for b.Loop() {
				buf, err := tc.a.Get(ctx)
				if err != nil {
					b.Fatal(err)
				}
				(*buf)[0] = 1
				tc.a.Put(buf)
			}
		})
	}
}

// BenchmarkGetPutParallel is BenchmarkGetPut from 4 goroutines at once.
func BenchmarkGetPutParallel(b *testing.B) {
	ctx := context.Background()
	procs := runtime.GOMAXPROCS(0)
	parallelism := (4 + procs - 1) / procs // at least 4 goroutines
	for _, tc := range benchAllocators(b) {
		b.Run("impl="+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(parallelism)
			if tc.a == nil {
				b.RunParallel(func(pb *testing.PB) {
					var local []byte
					for pb.Next() {
						local = make([]byte, pool.Quantum)
						local[0] = 1
					}
					runtime.KeepAlive(local)
				})
				return
			}
			warmUp(b, tc.a, 4)
			defer reportNews(b, tc.a)()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					buf, err := tc.a.Get(ctx)
					if err != nil {
						b.Error(err)
						return
					}
					(*buf)[0] = 1
					tc.a.Put(buf)
				}
			})
		})
	}
}

// warmUp takes n buffers and puts them back, so the measured loop starts in
// the steady state (for Fixed, n is capped at its slots).
func warmUp(b *testing.B, a pool.Allocator, n int) {
	b.Helper()
	if f, ok := a.(*pool.Fixed); ok {
		n = min(n, f.Slots())
	}
	bufs := make([]*[]byte, 0, n)
	for range n {
		buf, err := a.Get(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		bufs = append(bufs, buf)
	}
	for _, buf := range bufs {
		a.Put(buf)
	}
}

// reportNews returns a function that reports how many buffers a *pool.Pool
// allocated since reportNews was called, in the whole benchmark run: the
// pool's real footprint, which allocs/op averages away.
func reportNews(b *testing.B, a pool.Allocator) func() {
	p, ok := a.(*pool.Pool)
	if !ok {
		return func() {}
	}
	before := p.Stats().News
	return func() { b.ReportMetric(float64(p.Stats().News-before), "new-bufs") }
}
