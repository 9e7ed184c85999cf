package integration

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/googleapis/gax-go/v2"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/fakes/faultproxy"
	"github.com/objup/objup/fakes/frontend"
	"github.com/objup/objup/uploader"
)

// faultAppendsEnv sizes TestAppendableRandomFaults: that many appendable
// writers (CI runs the default), drawn from OBJUP_FAULT_SEED.
const faultAppendsEnv = "OBJUP_FAULT_APPENDS"

// TestAppendableRandomFaults runs appendable writers on a zonal bucket
// through a fault proxy in front of the fake's gRPC port that resets, cuts
// and stalls connections at random and drops them all now and then. Each
// writer appends records of 1 B to 600 KiB, flushes after each, and
// closes, under a deadline (short for some). Every outcome is checked
// against the fake:
//
//   - a Flush that returned nil returned the size written so far, and the
//     object holds at least those bytes from then on: a flushed byte is
//     never lost, and what the object holds is always a prefix of what
//     was written (nothing duplicated, nothing out of order);
//   - a Close that returned nil left the object finalized, byte-exact,
//     with the CRC32C of all of it;
//   - a Close that failed with an error of known outcome left it
//     unfinalized;
//   - no call returns more than faultOverrun after its context's
//     deadline, and no goroutine leaks.
//
// As TestRandomFaults, finalizes take from 0 to twice the attempt timeout,
// the proxy draws per connection whether it drops or delivers what it held
// from a sender that reset, and a second run goes through HAProxy as an L7
// front end.
func TestAppendableRandomFaults(t *testing.T) {
	for _, via := range []string{"direct", "frontend"} {
		t.Run(via, func(t *testing.T) {
			if v := os.Getenv("OBJUP_FAULT_VIA"); v != "" && v != via {
				t.Skipf("OBJUP_FAULT_VIA=%s", v)
			}
			appendableRandomFaults(t, via == "frontend")
		})
	}
}

// appendableRandomFaults is one run of TestAppendableRandomFaults.
func appendableRandomFaults(t *testing.T, frontEnd bool) {
	n, seed := faultCount(t, faultAppendsEnv, 24), faultSeed(t)
	t.Logf("%d appendable writers, seed %d (%s, %s)", n, seed, faultAppendsEnv, faultSeedEnv)
	const zonal = "zonal-faults"
	commits := rand.New(rand.NewPCG(seed, 0xc1))
	srv, err := fakes.New(fakes.WithZonalBucket(zonal), fakes.WithCommitDelays(func() time.Duration {
		if commits.IntN(5) > 0 {
			return time.Duration(commits.Int64N(int64(100 * time.Millisecond)))
		}
		return time.Duration(commits.Int64N(int64(2 * time.Second)))
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	target := srv.GRPCAddr()
	if frontEnd {
		target = frontend.StartTest(t, target, frontend.GRPC)
	}
	gp, err := faultproxy.New(target, faultproxy.WithRandom(int64(seed), faultproxy.Random{
		MeanBytes: 2 << 20,
		Weights:   [3]int{2, 1, 2},
		StallMin:  200 * time.Millisecond, StallMax: 3 * time.Second,
		DropMin: 4 * time.Second, DropMax: 12 * time.Second,
		Held: [2]int{1, 1},
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer gp.Close()
	c, err := uploader.NewClient(context.Background(), option.WithEndpoint(gp.Addr()), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
		uploader.WithRetry(uploader.Retry{Backoff: gax.Backoff{Initial: 10 * time.Millisecond, Max: 500 * time.Millisecond}, Deadline: 20 * time.Second, AttemptTimeout: time.Second}))
	if err != nil {
		t.Fatal(err)
	}

	type outcome struct {
		name      string
		written   []byte
		flushed   int64 // the last size a Flush returned
		closeErr  error
		violation string
		overrun   time.Duration
	}
	results := make([]outcome, n)
	rng := rand.New(rand.NewPCG(seed, 0x617070656e64))
	type plan struct {
		seed     uint64
		records  []int
		deadline time.Duration
	}
	plans := make([]plan, n)
	for i := range plans {
		p := plan{seed: rng.Uint64(), deadline: time.Minute}
		for range 1 + rng.IntN(6) {
			if rng.IntN(3) == 0 {
				p.records = append(p.records, 1+rng.IntN(600<<10))
			} else {
				p.records = append(p.records, 1+rng.IntN(4<<10))
			}
		}
		if rng.IntN(4) == 0 {
			p.deadline = 300*time.Millisecond + time.Duration(rng.Int64N(int64(2*time.Second)))
		}
		plans[i] = p
	}

	var wg sync.WaitGroup
	work := make(chan int)
	for range 6 {
		wg.Go(func() {
			for i := range work {
				p := plans[i]
				r := &results[i]
				r.name = fmt.Sprintf("append/%04d", i)
				ctx, cancel := context.WithTimeout(context.Background(), p.deadline)
				check := func(op string) {
					if d, _ := ctx.Deadline(); time.Since(d) > r.overrun {
						r.overrun = time.Since(d)
					}
					if over := r.overrun; over > faultOverrun && r.violation == "" {
						r.violation = fmt.Sprintf("%s returned %v past its context's deadline", op, over)
					}
				}
				w, err := c.NewWriter(ctx, zonal, r.name, uploader.WithAppendable())
				if err != nil {
					r.violation = fmt.Sprintf("NewWriter: %v", err)
					cancel()
					continue
				}
				data := faultPayload(sumOf(p.records), p.seed)
				failed := false
				for _, k := range p.records {
					if _, err := w.Write(data[len(r.written) : len(r.written)+k]); err != nil {
						check("Write")
						failed = true
						break
					}
					r.written = data[:len(r.written)+k]
					got, err := w.Flush(ctx)
					check("Flush")
					if err != nil {
						failed = true
						break
					}
					if got != int64(len(r.written)) && r.violation == "" {
						r.violation = fmt.Sprintf("Flush returned %d after %d bytes were written", got, len(r.written))
					}
					r.flushed = got
				}
				if failed {
					w.CloseWithError(fmt.Errorf("gave up"))
					r.closeErr = fmt.Errorf("abandoned after a failed call")
				} else {
					r.closeErr = w.Close()
					check("Close")
				}
				cancel()
			}
		})
	}
	for i := range plans {
		work <- i
	}
	close(work)
	wg.Wait()
	if err := c.Close(); err != nil {
		t.Errorf("Client.Close: %v", err)
	}
	sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
	defer scancel()
	if err := gp.Settle(sctx); err != nil {
		t.Errorf("proxy settle: %v", err)
	}
	st := gp.Stats()
	t.Logf("faults: %+v", st)

	var finalized, open, absent, violations int
	var maxOverrun time.Duration
	for _, r := range results {
		maxOverrun = max(maxOverrun, r.overrun)
		o, err := srv.Object(zonal, r.name)
		v := r.violation
		switch {
		case v != "":
		case err != nil && (r.closeErr == nil || r.flushed > 0):
			v = fmt.Sprintf("object missing (%v); Close %v, %d bytes flushed", err, r.closeErr, r.flushed)
		case err != nil:
			absent++
		case int64(len(o.Content)) < r.flushed || !bytes.HasPrefix(r.written, o.Content):
			v = fmt.Sprintf("holds %d bytes, not a prefix of the %d written of which %d flushed", len(o.Content), len(r.written), r.flushed)
		case r.closeErr == nil && (len(o.Content) != len(r.written) || o.Finalized.IsZero() || o.CRC32C != crc32.Checksum(r.written, crc32.MakeTable(crc32.Castagnoli))):
			v = fmt.Sprintf("Close returned nil, but the object holds %d of %d bytes, finalized %v", len(o.Content), len(r.written), !o.Finalized.IsZero())
		case r.closeErr != nil && !uploader.IsOutcomeUnknown(r.closeErr) && !o.Finalized.IsZero():
			v = fmt.Sprintf("Close failed (%v) but the object is finalized", r.closeErr)
		case !o.Finalized.IsZero():
			finalized++
		default:
			open++
		}
		if v != "" {
			violations++
			t.Errorf("%s: %s", r.name, v)
		}
	}
	t.Logf("%d finalized, %d left open, %d never created, %d violations; longest overrun %v", finalized, open, absent, violations, maxOverrun.Round(time.Millisecond))
}

func sumOf(ns []int) int {
	s := 0
	for _, n := range ns {
		s += n
	}
	return s
}
