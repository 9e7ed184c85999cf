package uploadertest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/api/option"
	"google.golang.org/grpc/codes"

	"github.com/objup/objup/header"
	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader"
)

// tenantCtx returns a context with the tenant id.
func tenantCtx(t *testing.T, id string) context.Context {
	t.Helper()
	ctx, err := header.WithTenant(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return ctx
}

// settle waits until the pool's budget waits have not changed for a while:
// the goroutines started before are all in line. It only orders the test's
// steps; nothing is asserted on time.
func settle(p *pool.Pool) {
	last := p.Stats().BudgetWaits
	for range 200 {
		time.Sleep(20 * time.Millisecond)
		now := p.Stats().BudgetWaits
		if now == last && now > 0 {
			return
		}
		last = now
	}
}

// holdBuffers opens n Writers under ctx that each hold one buffer (their
// first chunk) until they are closed.
func holdBuffers(t *testing.T, c *uploader.Client, ctx context.Context, n int) []*uploader.Writer {
	t.Helper()
	var ws []*uploader.Writer
	for i := range n {
		w, err := c.NewWriter(ctx, bucket, "hold/"+sizeName(i))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte{1}); err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	return ws
}

// TestTenantsTakeTurns: with the pool's budget of 4 buffers spent, tenant A
// with 100 uploads waiting and tenant B with one: B's upload gets a buffer
// within the next two releases, not after A's hundred.
func TestTenantsTakeTurns(t *testing.T) {
	p, err := pool.New(pool.WithBudget(4 * q))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, uploader.WithPool(p))
	ctxA, ctxB := tenantCtx(t, "a"), tenantCtx(t, "b")

	// Four Writers of A hold the whole budget.
	holders := holdBuffers(t, e.c, ctxA, 4)

	// Each waiter takes a buffer (its first Write), says so, and keeps it
	// until the test lets it go.
	var mu sync.Mutex
	var served []string
	gotOne := make(chan struct{}, 101)
	release := make(chan struct{})
	var wg sync.WaitGroup
	wait := func(ctx context.Context, who, name string) {
		defer wg.Done()
		w, err := e.c.NewWriter(ctx, bucket, name)
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := w.Write([]byte(who)); err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		served = append(served, who)
		mu.Unlock()
		gotOne <- struct{}{}
		<-release
		if err := w.Close(); err != nil {
			t.Error(err)
		}
	}
	for i := range 100 {
		wg.Add(1)
		go wait(ctxA, "a", "a/"+sizeName(i))
	}
	settle(p)
	wg.Add(1)
	go wait(ctxB, "b", "b/0")
	settle(p)

	for i, w := range holders[:2] {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-gotOne:
		case <-time.After(hangLimit):
			t.Fatalf("no waiter got the buffer of release %d", i+1)
		}
	}
	mu.Lock()
	first := append([]string(nil), served...)
	mu.Unlock()
	if len(first) != 2 || (first[0] != "b" && first[1] != "b") {
		t.Errorf("the first two releases served %v; B, waiting behind A's hundred, must be one of them", first)
	}

	// Let everybody finish: nobody starves, every object is stored.
	close(release)
	for _, w := range holders[2:] {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if n := e.count(); n != 105 {
		t.Fatalf("%d objects stored, want 105", n)
	}
	if n := p.Stats().InUseBytes; n != 0 {
		t.Fatalf("%d bytes of buffers still in use", n)
	}
}

// TestTenantLimitWaits: a tenant at its limit of uploads waits (it does not
// fail), gives up with context.Canceled when its context is cancelled,
// stores nothing and holds nothing; meanwhile another tenant uploads.
func TestTenantLimitWaits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits uploader.TenantLimits
	}{
		{"one upload", uploader.TenantLimits{Uploads: 1}},
		{"one chunk of bytes", uploader.TenantLimits{Bytes: q}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := pool.New()
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(t, uploader.WithPool(p), uploader.WithTenantLimits(tc.limits))
			ctxA := tenantCtx(t, "a")
			hold, err := e.c.NewWriter(ctxA, bucket, "a/holds")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := hold.Write([]byte("the limit")); err != nil {
				t.Fatal(err)
			}

			cctx, cancel := context.WithCancel(ctxA)
			done := make(chan error, 1)
			go func() {
				_, err := e.c.Upload(cctx, bucket, "a/waits", bytes.NewReader([]byte("waits")))
				done <- err
			}()
			// Another tenant is not held up.
			if _, err := e.c.Upload(tenantCtx(t, "b"), bucket, "b/runs", bytes.NewReader([]byte("runs"))); err != nil {
				t.Fatalf("tenant b: %v", err)
			}
			select {
			case err := <-done:
				t.Fatalf("a's second upload ended (%v) while a was at its limit", err)
			default:
			}
			cancel()
			err = returns(t, "the waiting upload", func() error { return <-done })
			if !errors.Is(err, context.Canceled) || uploader.CodeOf(err) != codes.Canceled {
				t.Fatalf("waiting upload: %v, want context.Canceled", err)
			}
			e.absent("a/waits")
			if err := hold.Close(); err != nil {
				t.Fatal(err)
			}
			// The limit is free again.
			if _, err := e.c.Upload(ctxA, bucket, "a/after", bytes.NewReader([]byte("after"))); err != nil {
				t.Fatalf("after the limit freed: %v", err)
			}
			if n := p.Stats().InUseBytes; n != 0 {
				t.Fatalf("%d bytes of buffers still in use", n)
			}
		})
	}
}

// TestTenantDefaultShare: on a pool with a budget of 8 buffers, a named
// tenant holds at most 7 of them by default, so another tenant's upload
// finds its buffer at once while the first tenant's next one waits (and
// gives up with context.Canceled when cancelled, storing nothing); uploads
// without a tenant are not bounded.
func TestTenantDefaultShare(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tenant string
		bound  bool // the 8th buffer of the tenant waits
	}{
		{"named tenant", "a", true},
		{"no tenant", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := pool.New(pool.WithBudget(8 * q))
			if err != nil {
				t.Fatal(err)
			}
			reader := sdkmetric.NewManualReader()
			e := newEnv(t, uploader.WithPool(p),
				uploader.WithTelemetry(uploader.Telemetry{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))}),
				uploader.WithTelemetry(uploader.Telemetry{TenantAttribute: func(id string) (string, bool) { return id, true }}))
			ctxA := context.Background()
			if tc.tenant != "" {
				ctxA = tenantCtx(t, tc.tenant)
			}
			holders := holdBuffers(t, e.c, ctxA, 7)
			cctx, cancel := context.WithCancel(ctxA)
			defer cancel()
			eighth, err := e.c.NewWriter(cctx, bucket, "eighth")
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := eighth.Write([]byte("eighth"))
				done <- err
			}()
			if !tc.bound {
				if err := returns(t, "the eighth Write", func() error { return <-done }); err != nil {
					t.Fatal(err)
				}
				if err := eighth.Close(); err != nil {
					t.Fatal(err)
				}
			} else {
				// The eighth Write waits at the tenant's share: a limit
				// wait is recorded, and no buffer comes.
				for start := time.Now(); limitWaits(t, reader) == 0; time.Sleep(5 * time.Millisecond) {
					select {
					case err := <-done:
						t.Fatalf("the tenant's eighth buffer came (%v) while it held its share", err)
					default:
					}
					if time.Since(start) > hangLimit {
						t.Fatal("the eighth Write neither waits at the tenant's share nor returns")
					}
				}
				// Another tenant's upload takes the buffer left free.
				if err := returns(t, "tenant b's upload", func() error {
					_, err := e.c.Upload(tenantCtx(t, "b"), bucket, "b/runs", bytes.NewReader([]byte("runs")))
					return err
				}); err != nil {
					t.Fatalf("tenant b: %v", err)
				}
				cancel()
				if err := returns(t, "the waiting Write", func() error { return <-done }); !errors.Is(err, context.Canceled) {
					t.Fatalf("waiting Write: %v, want context.Canceled", err)
				}
				eighth.Close()
				e.absent("eighth")
			}
			for _, w := range holders {
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if n := p.Stats().InUseBytes; n != 0 {
				t.Fatalf("%d bytes of buffers still in use", n)
			}
		})
	}
}

// limitWaits returns the waits at a tenant's limit recorded in reader.
func limitWaits(t *testing.T, reader *sdkmetric.ManualReader) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if d, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "objup.tenant.limit_waits" {
				for _, pt := range d.DataPoints {
					n += pt.Value
				}
			}
		}
	}
	return n
}

// TestTenantWaitMetrics: with Telemetry.TenantAttribute, a wait at the pool's
// budget is recorded in objup.buffer.wait and a wait at a tenant's limit in
// objup.tenant.limit_waits, under the tenant's attribute; without it,
// neither instrument exists.
func TestTenantWaitMetrics(t *testing.T) {
	for _, withAttr := range []bool{true, false} {
		t.Run(fmt.Sprintf("attribute=%v", withAttr), func(t *testing.T) {
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			p, err := pool.New(pool.WithBudget(q))
			if err != nil {
				t.Fatal(err)
			}
			opts := []option.ClientOption{uploader.WithPool(p), uploader.WithTelemetry(uploader.Telemetry{MeterProvider: mp}), uploader.WithTenantLimits(uploader.TenantLimits{Uploads: 1})}
			if withAttr {
				opts = append(opts, uploader.WithTelemetry(uploader.Telemetry{TenantAttribute: func(id string) (string, bool) { return id, true }}))
			}
			e := newEnv(t, opts...)
			ctx := tenantCtx(t, "acme")
			hold, err := e.c.NewWriter(ctx, bucket, "hold")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := hold.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := e.c.Upload(ctx, bucket, "waits", bytes.NewReader([]byte("y")))
				done <- err
			}()
			collect := func() (limitWaits int64, seen map[string]bool) {
				var rm metricdata.ResourceMetrics
				if err := reader.Collect(context.Background(), &rm); err != nil {
					t.Fatal(err)
				}
				seen = map[string]bool{}
				for _, sm := range rm.ScopeMetrics {
					for _, m := range sm.Metrics {
						seen[m.Name] = true
						if d, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "objup.tenant.limit_waits" {
							for _, pt := range d.DataPoints {
								if v, _ := pt.Attributes.Value("objup.tenant"); v.AsString() != "acme" {
									t.Errorf("limit wait without the tenant: %v", pt.Attributes)
								}
								limitWaits += pt.Value
							}
						}
					}
				}
				return limitWaits, seen
			}
			// The second upload waits at acme's limit of one upload; once
			// the first is done, it gets the slot and the buffer.
			for i := 0; withAttr && i < 1000; i++ {
				if n, _ := collect(); n > 0 {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := hold.Close(); err != nil {
				t.Fatal(err)
			}
			if err := returns(t, "the waiting upload", func() error { return <-done }); err != nil {
				t.Fatal(err)
			}
			limitWaits, seen := collect()
			if !withAttr {
				if seen["objup.buffer.wait"] || seen["objup.tenant.limit_waits"] {
					t.Fatalf("per-tenant wait metrics without Telemetry.TenantAttribute: %v", seen)
				}
				return
			}
			if limitWaits < 1 || !seen["objup.buffer.wait"] {
				t.Fatalf("limit waits %d, buffer wait recorded %v; want both", limitWaits, seen["objup.buffer.wait"])
			}
		})
	}
}
