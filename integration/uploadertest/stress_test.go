package uploadertest_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader"
	"github.com/objup/objup/uploader/experimental"
)

// TestStressFaultyUploads runs many uploads at once through a tight pool
// budget and through caller buffers, while the fake breaks streams, fails
// calls and stalls, and some uploads are cancelled or abandoned. Every upload
// must end, either with its object stored byte-exact or with an error and
// nothing stored, and every buffer must come back. It is bounded in count
// (4 rounds of 24 uploads); run it under load with -count and -cpu to hunt
// for hangs and leaks.
//
// A watchdog fails the test with every goroutine's stack if a round does not
// end within two minutes: a hang is a bug to read, not a timeout to raise.
func TestStressFaultyUploads(t *testing.T) {
	p, err := pool.New(pool.WithBudget(8 * q))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, uploader.WithPool(p), experimental.WithChunksInFlight(2),
		retryWith(uploader.Retry{AttemptTimeout: 500 * time.Millisecond, Deadline: 5 * time.Second}))
	sizes := []int{0, 2 * kib, 200 * kib, q, 3*q + 17, 1*mib + 5}
	for round := range 4 {
		rng := rand.New(rand.NewPCG(uint64(round), 99))
		for range 3 {
			e.srv.BreakStream("BidiWriteObject", int64(rng.IntN(3*q)), codes.Unavailable)
		}
		e.srv.FailCall("QueryWriteStatus", 2, codes.Unavailable)
		e.srv.FailCall("WriteObject", 3, codes.Unavailable)
		e.srv.FailCall("StartResumableWrite", 2, codes.ResourceExhausted)
		e.srv.CorruptNext("BidiWriteObject")

		const n = 24
		type outcome struct {
			name string
			data []byte
			err  error
		}
		out := make([]outcome, n)
		var wg sync.WaitGroup
		for i := range n {
			name := fmt.Sprintf("stress/%d/%d", round, i)
			data := payload(sizes[i%len(sizes)], uint64(round*n+i))
			mode := i % 4
			delay := time.Duration(rng.IntN(20)) * time.Millisecond
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var opts []uploader.WriterOption
				switch mode {
				case 1: // caller buffer of two slots
					opts = append(opts, uploader.WithBuffer(make([]byte, 2*q)))
				case 2: // cancelled while it runs
					time.AfterFunc(delay, cancel)
				}
				opts = append(opts, uploader.WithConditions(uploader.Conditions{DoesNotExist: true}))
				w, err := e.c.NewWriter(ctx, bucket, name, opts...)
				if err == nil {
					writeSplit(t, writerNoFail{w}, data, uint64(i))
					if mode == 3 && len(data) > q {
						err = w.CloseWithError(errors.New("abandoned"))
						if err == nil {
							err = errors.New("abandoned")
						}
					} else {
						err = w.Close()
					}
				}
				out[i] = outcome{name, data, err}
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			buf := make([]byte, 1<<20)
			t.Fatalf("round %d did not end within 2 minutes; goroutines:\n%s", round, buf[:runtime.Stack(buf, true)])
		}
		e.srv.ClearFaults()
		for _, o := range out {
			switch {
			case o.err == nil:
				sameBytes(t, o.name, e.content(o.name), o.data)
			case errors.Is(o.err, context.Canceled), uploader.CodeOf(o.err) == codes.FailedPrecondition:
				// A cancel that races with the final call cannot undo what
				// the service already stored; nor can an attempt that timed
				// out after the service stored the object, whose retry then
				// fails DoesNotExist. Either way the object is whole.
				if e.exists(o.name) {
					sameBytes(t, o.name+" (stored by an attempt that looked failed)", e.content(o.name), o.data)
				}
			default:
				if e.exists(o.name) {
					t.Fatalf("%s was stored although its upload failed: %v", o.name, o.err)
				}
			}
		}
		if s := p.Stats(); s.InUseBytes != 0 {
			t.Fatalf("round %d: the pool has %d bytes in use after every upload ended", round, s.InUseBytes)
		}
	}
}

// writerNoFail lets writeSplit go on after a failed Write: the failure shows
// at Close, which is what the stress test checks.
type writerNoFail struct{ w *uploader.Writer }

func (w writerNoFail) Write(p []byte) (int, error) {
	w.w.Write(p)
	return len(p), nil
}
