package uploadertest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/api/option"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/fakes/capacity"
	"github.com/objup/objup/header"
	"github.com/objup/objup/uploader"
	"github.com/objup/objup/uploader/experimental"
)

// TestRefusedWriteIsRetried: a write the service refuses for load
// (RESOURCE_EXHAUSTED) was not applied, so it is retried even without a
// precondition (which the default policy needs for any other failure), and
// the object is stored once; with WithoutAdmission too.
func TestRefusedWriteIsRetried(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method string
		size   int
		opts   []uploader.WriterOption
	}{
		{"one-shot", fakes.MethodWriteObject, kib, nil},
		{"resumable start", fakes.MethodStartResumableWrite, 3 * mib, nil},
	} {
		for _, admission := range []bool{true, false} {
			name := tc.name
			if !admission {
				name += "/without admission"
			}
			t.Run(name, func(t *testing.T) {
				var e *env
				if admission {
					e = newEnv(t)
				} else {
					e = newEnv(t, experimental.WithoutAdmission())
				}
				e.srv.FailCall(tc.method, 1, codes.ResourceExhausted)
				e.srv.FailCall(tc.method, 2, codes.ResourceExhausted)
				data := payload(tc.size, 51)
				if _, err := e.c.Upload(context.Background(), bucket, "refused", bytes.NewReader(data), tc.opts...); err != nil {
					t.Fatalf("Upload: %v", err)
				}
				sameBytes(t, "stored", e.content("refused"), data)
				if n := e.countCalls(tc.method); n != 3 {
					t.Fatalf("%d calls of %s, want the two refused and the one that stored", n, tc.method)
				}
			})
		}
	}
}

// TestTenantWriteRate: a tenant at its write rate (TenantLimits.Writes)
// waits, never fails, and does not slow another tenant.
func TestTenantWriteRate(t *testing.T) {
	e := newEnv(t, uploader.WithTenantLimits(uploader.TenantLimits{Writes: 10}))
	var mu sync.Mutex
	var order []string
	upload := func(tenant, name string) {
		ctx, err := header.WithTenant(context.Background(), tenant)
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := e.c.Upload(ctx, bucket, name, bytes.NewReader([]byte(name))); err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
		mu.Lock()
		order = append(order, tenant)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() { upload("busy", fmt.Sprintf("busy/%d", i)) })
	}
	for { // the busy tenant has started
		mu.Lock()
		n := len(order)
		mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	upload("other", "other/0")
	wg.Wait()
	if len(order) != 21 {
		t.Fatalf("%d uploads stored, want 21", len(order))
	}
	for i, tenant := range order {
		if tenant == "other" {
			if i >= 15 {
				t.Fatalf("the other tenant's upload ended %dth of 21: the busy tenant's rate held it back", i+1)
			}
			return
		}
	}
}

// capacityEnv is an env whose fake admits rate object writes a second.
func capacityEnv(t *testing.T, cfg capacity.Config, opts ...option.ClientOption) *env {
	return newEnvFake(t, []fakes.Option{fakes.WithCapacity(cfg)}, opts...)
}

// counts returns the fake's capacity counts for the bucket.
func (e *env) counts() capacity.Counts {
	for _, b := range e.srv.CapacityStats() {
		if b.Bucket == bucket {
			return b.Counts
		}
	}
	return capacity.Counts{}
}

// TestAdmissionUnderCapacity: 64 uploads at once, without a precondition,
// against a bucket that admits 200 writes a second. Without admission most
// of them fail: a refused write was once not retried, and the refusals
// come back so fast that the client offers many times the capacity. With
// it, none fails, and after the first second most attempts are admitted.
func TestAdmissionUnderCapacity(t *testing.T) {
	e := capacityEnv(t, capacity.Config{Rate: 200, Burst: 20, ObjectRate: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var stored, failed atomic.Int64
	var mid capacity.Counts
	var once sync.Once
	start := time.Now()
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				if time.Since(start) > time.Second {
					once.Do(func() { mid = e.counts() })
				}
				uctx, ucancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, err := e.c.Upload(uctx, bucket, fmt.Sprintf("cap/%d/%d", g, i), bytes.NewReader([]byte("x")))
				ucancel()
				if err != nil {
					failed.Add(1)
					t.Errorf("upload: %v", err)
					return
				}
				stored.Add(1)
			}
		})
	}
	wg.Wait()
	end := e.counts()
	admitted, refused := end.Admitted-mid.Admitted, end.Refused()-mid.Refused()
	t.Logf("%d stored, %d failed; after the first second %d admitted, %d refused", stored.Load(), failed.Load(), admitted, refused)
	if refused > admitted {
		t.Fatalf("after the first second the service refused %d writes and admitted %d: the client does not adapt", refused, admitted)
	}
}

// TestNamePushbackLeavesTheBucketAlone: writes refused for one object
// name's own rate are retried (with the backoff) until stored, and do not
// slow the bucket: uploads of other names are never refused meanwhile.
func TestNamePushbackLeavesTheBucketAlone(t *testing.T) {
	e := capacityEnv(t, capacity.Config{Rate: 1000})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 4 { // the same name, faster than once a second
			if _, err := e.c.Upload(context.Background(), bucket, "hot", bytes.NewReader([]byte{byte(i)})); err != nil {
				t.Errorf("hot upload %d: %v", i, err)
			}
		}
	})
	for i := range 100 {
		if _, err := e.c.Upload(context.Background(), bucket, fmt.Sprintf("cold/%d", i), bytes.NewReader([]byte("x"))); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	c := e.counts()
	if c.ObjectRateLimited == 0 {
		t.Fatal("the hot name was never refused: the test tests nothing")
	}
	if c.RateLimited != 0 || c.Unavailable != 0 {
		t.Fatalf("counts %+v: the bucket refused writes", c)
	}
	if got := e.content("hot"); len(got) != 1 || got[0] != 3 {
		t.Fatalf("hot holds %v, want the last write", got)
	}
}

// TestAdmissionWaitCancelled: an upload waiting for its turn at a bucket
// that pushed back returns its context's error when the context ends, and
// nothing of it is sent.
func TestAdmissionWaitCancelled(t *testing.T) {
	e := capacityEnv(t, capacity.Config{Rate: 2, Burst: 1, ObjectRate: -1})
	// Push the bucket back: its stage then admits about a write a second.
	for i := range 4 {
		if _, err := e.c.Upload(context.Background(), bucket, fmt.Sprintf("first/%d", i), bytes.NewReader([]byte("x"))); err != nil {
			t.Fatal(err)
		}
	}
	before := e.counts()
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	for i := range 32 {
		wg.Go(func() {
			_, err := e.c.Upload(ctx, bucket, fmt.Sprintf("late/%d", i), bytes.NewReader([]byte("x")))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	waited := 0
	for err := range errs {
		if err == nil {
			continue
		}
		if !errors.Is(err, context.DeadlineExceeded) || uploader.IsOutcomeUnknown(err) {
			t.Fatalf("Upload: %v, want the context's DeadlineExceeded of an upload never sent", err)
		}
		waited++
	}
	after := e.counts()
	sent := (after.Admitted + after.Refused()) - (before.Admitted + before.Refused())
	// In 200 ms the stage lets about one write go: the others waited
	// their whole context and never reached the service.
	if waited < 28 || sent > 3 {
		t.Fatalf("%d of 32 uploads ended waiting, %d writes reached the service: want most waiting, never sent", waited, sent)
	}
	for i := range 32 {
		if o, err := e.srv.Object(bucket, fmt.Sprintf("late/%d", i)); err == nil && sent == 0 {
			t.Fatalf("late/%d stored (%d bytes) though nothing was sent", i, len(o.Content))
		}
	}
}

// TestWriteRamp: a client with a write ramp paces a new bucket's writes
// from the start, before any pushback: 40 uploads at 20 writes a second,
// doubling every second, take over a second; a bad ramp is refused.
func TestWriteRamp(t *testing.T) {
	e := newEnv(t, experimental.WithWriteRamp(20, time.Second))
	start := time.Now()
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			if _, err := e.c.Upload(context.Background(), bucket, fmt.Sprintf("ramp/%d", i), bytes.NewReader([]byte("x"))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if d := time.Since(start); d < time.Second {
		t.Fatalf("40 uploads took %v at a ramp of 20 writes a second", d)
	}
	for _, bad := range []option.ClientOption{experimental.WithWriteRamp(0, time.Second), experimental.WithWriteRamp(10, 0)} {
		if _, err := uploader.NewClient(context.Background(), append(dialOptions(e.srv), bad)...); uploader.CodeOf(err) != codes.InvalidArgument {
			t.Fatalf("NewClient with a bad ramp: %v, want InvalidArgument", err)
		}
	}
}
