package admit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// pushedBack returns a bucket of a new stage that was pushed back and
// admits rate writes a second.
func pushedBack(t *testing.T, rate float64, tenantOf func(context.Context) string) *Bucket {
	t.Helper()
	b := New(tenantOf, nil, nil).Bucket("b")
	if _, err := b.Wait(context.Background(), 0, false); err != nil {
		t.Fatal(err)
	}
	b.Answer(Pushback)
	t.Cleanup(b.Close)
	b.mu.Lock()
	b.rate, b.wmax, b.probing = rate, rate, false
	b.mu.Unlock()
	if st := b.Stats(); !st.Active || st.Rate != rate {
		t.Fatalf("after a pushback: %+v, want active at %v/s", st, rate)
	}
	return b
}

// TestOpenUntilPushback: writes pass at once while the service says yes,
// and a per-name pushback or another failure leaves the bucket open.
func TestOpenUntilPushback(t *testing.T) {
	b := New(nil, nil, nil).Bucket("b")
	defer b.Close()
	for _, o := range []Outcome{OK, NamePushback, Other, OK} {
		if d, err := b.Wait(context.Background(), 0, false); err != nil || d != 0 {
			t.Fatalf("Wait = %v, %v on an open bucket", d, err)
		}
		b.Answer(o)
	}
	if st := b.Stats(); st.Active || st.Rejections != 1 {
		t.Fatalf("stats %+v: want open, one (per-name) rejection", st)
	}
	b.Answer(Pushback)
	if !b.Stats().Active {
		t.Fatal("a pushback left the bucket open")
	}
}

// TestOldestFirstByTenant: waiting writes go a tenant at a time in turn,
// each tenant's oldest first, whatever order they came in.
func TestOldestFirstByTenant(t *testing.T) {
	type key struct{}
	tenantOf := func(ctx context.Context) string { s, _ := ctx.Value(key{}).(string); return s }
	b := pushedBack(t, 50, tenantOf)
	b.mu.Lock()
	b.tokens = 0 // every write below waits
	b.refill = time.Now().Add(time.Hour)
	b.mu.Unlock()
	// The order of the grants, as the bucket makes them: the order in
	// which the granted goroutines run again is the scheduler's.
	var order []string
	b.mu.Lock()
	b.onGrant = func(tenant string, prio int64) { order = append(order, tenant+string(rune('0'+prio))) }
	b.mu.Unlock()
	var wg sync.WaitGroup
	start := func(tenant string, prio int64) {
		ctx := context.WithValue(context.Background(), key{}, tenant)
		wg.Go(func() {
			if _, err := b.Wait(ctx, prio, true); err != nil {
				t.Error(err)
			}
		})
		for b.queued() < 1 { // the write is queued before the next comes
			time.Sleep(time.Millisecond)
		}
	}
	n := 0
	for _, w := range []struct {
		tenant string
		prio   int64
	}{{"a", 5}, {"a", 3}, {"a", 9}, {"a", 1}, {"b", 7}} {
		start(w.tenant, w.prio)
		n++
		for b.queued() < n {
			time.Sleep(time.Millisecond)
		}
	}
	b.mu.Lock()
	b.refill = time.Now()
	b.tokens = 0
	b.grantLocked(time.Now()) // the timer takes over from here
	b.mu.Unlock()
	wg.Wait()
	got := ""
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range order {
		got += s + " "
	}
	// a's oldest, then b's, then a's in order.
	if got != "a1 b7 a3 a5 a9 " {
		t.Fatalf("granted %s, want a1 b7 a3 a5 a9", got)
	}
}

// TestTenantWeights: a tenant of weight 2 gets two writes a turn.
func TestTenantWeights(t *testing.T) {
	b := New(nil, func(tenant string) int {
		if tenant == "heavy" {
			return 2
		}
		return 1
	}, nil).Bucket("b")
	b.mu.Lock()
	for _, tenant := range []string{"heavy", "light"} {
		q := &queue{tenant: tenant}
		b.tenants[tenant] = q
		for i := range 4 {
			q.push(&waiter{prio: int64(i), ch: make(chan struct{}), q: q})
		}
		q.inRing = true
		b.ring = append(b.ring, q)
	}
	var got []string
	for len(b.ring) > 0 {
		q := b.ring[b.next%len(b.ring)]
		b.tokens, b.rate, b.refill = 1, 1, time.Now().Add(time.Hour)
		b.grantLocked(time.Now().Add(-time.Hour))
		got = append(got, q.tenant[:1])
	}
	if b.timer != nil {
		b.timer.Stop()
	}
	b.mu.Unlock()
	if s := fmt.Sprint(got); s != "[h h l h h l l l]" {
		t.Fatalf("turns %s, want [h h l h h l l l]", s)
	}
}

// queued returns how many writes wait.
func (b *Bucket) queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, q := range b.ring {
		n += len(q.heap)
	}
	return n
}

// TestCancelWhileWaiting: a write whose context ends while it waits gets
// the context's error at once, and takes nothing: the next write goes at
// the turn the cancelled one would have had.
func TestCancelWhileWaiting(t *testing.T) {
	b := pushedBack(t, 2, nil)
	b.mu.Lock()
	b.tokens = 0
	b.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := b.Wait(ctx, 1, true)
		done <- err
	}()
	for b.queued() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v, want context.Canceled", err)
	}
	if n := b.queued(); n != 0 {
		t.Fatalf("%d writes still queued", n)
	}
	if _, err := b.Wait(context.Background(), 2, false); err != nil {
		t.Fatal(err)
	}
}

// TestFleetConverges: four clients (stages) with 16 writers each share a
// simulated bucket that admits 300 writes a second and refuses the rest.
// Without admission they would offer thousands of attempts a second; with
// it, the attempts settle near the capacity and most of them succeed, and
// no write fails for admission.
func TestFleetConverges(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for 4 s")
	}
	const capacity = 300.0
	var svc struct {
		sync.Mutex
		tokens float64
		last   time.Time
	}
	svc.last = time.Now()
	admit := func() bool {
		svc.Lock()
		defer svc.Unlock()
		now := time.Now()
		svc.tokens = min(svc.tokens+now.Sub(svc.last).Seconds()*capacity, capacity/20)
		svc.last = now
		if svc.tokens >= 1 {
			svc.tokens--
			return true
		}
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	measureFrom := time.Now().Add(2 * time.Second)
	var attempts, stored atomic.Int64
	var wg sync.WaitGroup
	for i := range 4 {
		b := New(nil, nil, nil).Bucket("shared")
		defer b.Close()
		if i == 0 && testing.Verbose() {
			wg.Go(func() {
				for ctx.Err() == nil {
					time.Sleep(250 * time.Millisecond)
					t.Logf("client 0: %+v, succeeding at %.0f/s", b.Stats(), b.sent.rate(time.Now()))
				}
			})
		}
		for range 16 {
			wg.Go(func() {
				for ctx.Err() == nil {
					prio := time.Now().UnixNano()
					refused := false
					for ctx.Err() == nil { // one write, retried until stored
						if _, err := b.Wait(ctx, prio, refused); err != nil {
							if !errors.Is(err, context.DeadlineExceeded) {
								t.Errorf("Wait: %v", err)
							}
							return
						}
						ok := admit()
						if time.Now().After(measureFrom) {
							attempts.Add(1)
						}
						time.Sleep(2 * time.Millisecond) // the write's round trip
						if ok {
							b.Answer(OK)
							if time.Now().After(measureFrom) {
								stored.Add(1)
							}
							break
						}
						b.Answer(Pushback)
						refused = true
					}
				}
			})
		}
	}
	wg.Wait()
	a, s := float64(attempts.Load())/2, float64(stored.Load())/2
	t.Logf("last 2 s: %.0f attempts/s, %.0f stored/s, capacity %.0f/s", a, s, capacity)
	if s < 0.6*capacity || a > 2*capacity {
		t.Fatalf("%.0f stored/s and %.0f attempts/s at a capacity of %.0f/s: want most of it stored, attempts near it", s, a, capacity)
	}
}

// TestRamp: with a ramp, a new bucket admits writes at the ramp's rate,
// doubling every period, before any pushback: here 20 a second doubling
// every half second lets about 43 writes through in a second, where the
// open stage would let thousands.
func TestRamp(t *testing.T) {
	s := New(nil, nil, nil)
	s.Ramp(20, 500*time.Millisecond)
	b := s.Bucket("new")
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var n atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				if _, err := b.Wait(ctx, 0, false); err != nil {
					return
				}
				n.Add(1)
				b.Answer(OK)
			}
		})
	}
	wg.Wait()
	if got := n.Load(); got < 20 || got > 90 {
		t.Fatalf("%d writes in the ramp's first second, want about 43", got)
	}
}

// TestLoneWriteGoesAtOnce: on a pushed-back bucket with no token left, a
// write that finds none of the client's writes in flight or waiting goes
// at once while the service refuses few of the client's writes; one that
// finds another in flight, that retries a refused write, or that comes
// while the service refuses many, waits for its turn.
func TestLoneWriteGoesAtOnce(t *testing.T) {
	b := pushedBack(t, 1000, nil)
	for range 40 { // one refusal in 41 answers: under LoneRefusals
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := b.Wait(ctx, 0, false)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		b.Answer(OK)
	}
	drain := func() {
		b.mu.Lock()
		b.tokens, b.refill = 0, time.Now().Add(time.Hour)
		b.mu.Unlock()
	}
	waits := func(retry bool) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		d, err := b.Wait(ctx, 2, retry)
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return true
		case err != nil:
			t.Fatal(err)
		case d != 0:
			t.Fatalf("a write went after %v without a turn", d)
		}
		return false
	}
	drain()
	if waits(false) {
		t.Fatal("a lone write waited")
	}
	// That write is in flight now.
	if !waits(false) {
		t.Fatal("a write beside one in flight went at once")
	}
	b.Answer(Pushback) // the one in flight was refused
	drain()
	if !waits(true) {
		t.Fatal("the retry of a refused write went at once")
	}
	for range 5 { // refused often: lone writes are paced again
		b.mu.Lock()
		b.tokens = 1
		b.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := b.Wait(ctx, 0, true)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		b.Answer(Pushback)
		drain()
	}
	if !waits(false) {
		t.Fatal("a lone write went at once while the service refuses many")
	}
}
