package mode

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestProgressReporter: reports from many goroutines at once reach f one
// call at a time, with growing values, ending with the highest; 0 counts.
func TestProgressReporter(t *testing.T) {
	var running atomic.Int32
	var got []int64
	r := NewProgress(func(n int64) {
		if running.Add(1) != 1 {
			t.Error("two calls of f at once")
		}
		got = append(got, n)
		running.Add(-1)
	})
	r.Report(0)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				r.Report(int64(i*8 + g))
			}
		})
	}
	wg.Wait()
	if got[0] != 0 || got[len(got)-1] != 7999 {
		t.Fatalf("reports from %d to %d, want from 0 to 7999", got[0], got[len(got)-1])
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("report %d after %d", got[i], got[i-1])
		}
	}
	var nilReporter *Progress
	nilReporter.Report(1) // does nothing
}
