package uploader_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/header"
	"github.com/objup/objup/uploader"
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
					e = newEnv(t, uploader.WithoutAdmission())
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
