package telemetry

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/header"
)

type scope struct {
	ctx context.Context
	tel *Telemetry
}

func (s *scope) Context() context.Context       { return s.ctx }
func (s *scope) Names() (bucket, object string) { return "b", "o" }
func (s *scope) Telemetry() *Telemetry          { return s.tel }

// TestAttributeSetsAreReused checks that each distinct attribute set is
// built once, and that an upload's end records without allocating.
func TestAttributeSetsAreReused(t *testing.T) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer mp.Shutdown(context.Background())
	tel, err := New(Config{MeterProvider: mp, Tenant: func(id string) (string, bool) { return "tier-1", id == "t1" }}, nil, status.Code)
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Close()
	a := tel.opts(setKey{code: codes.OK, path: "one-shot"})
	if b := tel.opts(setKey{code: codes.OK, path: "one-shot"}); a != b {
		t.Fatal("the same attribute set was built twice")
	}
	if c := tel.opts(setKey{code: codes.Unavailable, path: "one-shot"}); c == a {
		t.Fatal("two attribute sets share their options")
	}
	ctx, err := header.WithTenant(context.Background(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	if v := tel.tenantOf(ctx); v != "tier-1" {
		t.Fatalf("tenant attribute %q, want tier-1", v)
	}
	s := &scope{ctx: ctx, tel: tel}
	ev := NewEvents(s, nil)
	ev.Ended(1, "one-shot", nil) // builds the set
	if n := testing.AllocsPerRun(100, func() {
		ev := NewEvents(s, nil)
		ev.Ended(1, "one-shot", nil)
	}); n > 0 {
		t.Fatalf("an upload's end allocates %v times", n)
	}
}

func TestResultName(t *testing.T) {
	for _, tt := range []struct {
		code codes.Code
		want string
	}{
		{codes.OK, "ok"},
		{codes.Unavailable, "Unavailable"},
		{codes.FailedPrecondition, "FailedPrecondition"},
	} {
		if got := resultName(tt.code); got != tt.want {
			t.Errorf("resultName(%v) = %q, want %q", tt.code, got, tt.want)
		}
	}
}
