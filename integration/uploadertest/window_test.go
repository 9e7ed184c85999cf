package uploadertest_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/fakes/link"
	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader"
	"github.com/objup/objup/uploader/experimental"
)

// noLeaks checks, when the test's other cleanups have run, that it left no
// goroutine behind.
func noLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// peakInUse samples p's bytes in use until stop is called, which returns
// the most it saw.
func peakInUse(p *pool.Pool) (stop func() int64) {
	var peak atomic.Int64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if n := p.Stats().InUseBytes; n > peak.Load() {
					peak.Store(n)
				}
			}
		}
	}()
	return func() int64 {
		close(done)
		<-finished
		return peak.Load()
	}
}

// TestWindowGrowsToThePath: through a path of 200 ms and 100 MB/s (20 MB
// in flight fill it), an upload's window grows past the 16 MiB it starts
// with to at least the path's bandwidth x RTT, and not past
// WithMaxInFlight. The window is read from the pool: every byte in flight
// holds a buffer.
func TestWindowGrowsToThePath(t *testing.T) {
	const bdp = 100e6 * 0.2
	p, err := pool.New()
	if err != nil {
		t.Fatal(err)
	}
	noLeaks(t)
	srv := fakes.NewTest(t, fakes.WithBucket(bucket), fakes.WithLink(link.Config{RTT: 200 * time.Millisecond, Bandwidth: 100e6}))
	c := clientVia(t, srv.GRPCAddr(), uploader.WithPool(p), experimental.WithMaxInFlight(48*mib))
	data := payload(128*mib, 31)
	stop := peakInUse(p)
	if _, err := c.Upload(context.Background(), bucket, "far", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	peak := stop()
	t.Logf("peak bytes in flight %d (path: %.0f)", peak, bdp)
	if peak < int64(bdp) {
		t.Fatalf("the window peaked at %d bytes in use, below the path's %.0f: it did not grow", peak, bdp)
	}
	if peak > 48*mib+2*q {
		t.Fatalf("%d bytes in use, over WithMaxInFlight's 48 MiB and the chunk being filled", peak)
	}
	o, err := srv.Object(bucket, "far")
	if err != nil || !bytes.Equal(o.Content, data) {
		t.Fatalf("stored object: %v", err)
	}
}

// TestWindowsShareABudget: four uploads through a long path share a pool
// budget of 8 MiB, less than one upload's grown window: the budget holds,
// the windows give way, and every upload finishes, byte-exact.
func TestWindowsShareABudget(t *testing.T) {
	const budget = 8 * mib
	p, err := pool.New(pool.WithBudget(budget))
	if err != nil {
		t.Fatal(err)
	}
	noLeaks(t)
	srv := fakes.NewTest(t, fakes.WithBucket(bucket), fakes.WithLink(link.Config{RTT: 50 * time.Millisecond, Bandwidth: 50e6}))
	c := clientVia(t, srv.GRPCAddr(), uploader.WithPool(p))
	stop := peakInUse(p)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	datas := make([][]byte, 4)
	for i := range 4 {
		datas[i] = payload(12*mib, uint64(40+i))
		wg.Go(func() {
			_, err := c.Upload(context.Background(), bucket, fmt.Sprintf("shared/%d", i), bytes.NewReader(datas[i]))
			errs <- err
		})
	}
	wg.Wait()
	peak := stop()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if peak > budget {
		t.Fatalf("%d bytes in use, over the budget of %d", peak, budget)
	}
	for i := range 4 {
		o, err := srv.Object(bucket, fmt.Sprintf("shared/%d", i))
		if err != nil || !bytes.Equal(o.Content, datas[i]) {
			t.Fatalf("upload %d: %v", i, err)
		}
	}
	if p.Stats().BudgetWaits == 0 {
		t.Fatal("the uploads never waited for the budget: the test does not contend")
	}
}
