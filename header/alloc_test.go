package header

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc/metadata"
)

// chainOf returns a context with a chain of depth appends of one pair.
func chainOf(depth int) context.Context {
	ctx := context.Background()
	for i := range depth {
		ctx = Append(ctx, "k", fmt.Sprint(i))
	}
	return ctx
}

// TestAppendIsConstant checks that an append links one node to the previous
// head and allocates the same at any depth; counts, not time.
func TestAppendIsConstant(t *testing.T) {
	for _, depth := range []int{0, 1, 64, 4096} {
		parent := chainOf(depth)
		head := chain(parent)
		n := Append(parent, "k", "v").(*node)
		if n.prev != head || depth > 0 && head.Context == nil {
			t.Fatalf("depth %d: node links to %p, want the head %p", depth, n.prev, head)
		}
		if n.Context != parent {
			t.Fatalf("depth %d: node's parent is not ctx", depth)
		}
		if got := testing.AllocsPerRun(100, func() { Append(parent, "k", "v") }); got != 1 {
			t.Errorf("depth %d: Append of one pair allocates %v times, want 1", depth, got)
		}
	}
}

func TestAllocs(t *testing.T) {
	ctx := chainOf(16)
	tenant, _ := WithTenant(ctx, "t")
	deep := chainOf(64)
	small, _ := WithTenant(chainOf(1), "t")
	in := metadata.NewIncomingContext(context.Background(), metadata.Pairs(TenantKey, "t", "a", "1", "b", "2"))
	cases := []struct {
		name string
		max  float64
		f    func()
	}{
		{"Append one pair", 1, func() { Append(ctx, "k", "v") }},
		{"Append upper-case key", 2, func() { Append(ctx, "K", "v") }},
		{"Append two pairs", 2, func() { Append(ctx, "k", "v", "k2", "v2") }},
		{"AppendChecked one pair", 1, func() { _, _ = AppendChecked(ctx, "k", "v") }},
		{"AppendChecked two pairs", 2, func() { _, _ = AppendChecked(ctx, "k", "v", "k2", "v2") }},
		{"WithTenant", 1, func() { _, _ = WithTenant(ctx, "tenant-1") }},
		{"Tenant", 0, func() { Tenant(tenant) }},
		{"FromIncoming", 1, func() { FromIncoming(in, TenantKey) }},
		{"OutgoingContext of 2 nodes", 5, func() { OutgoingContext(small, "x-goog-request-params", "bucket=b") }},
		{"OutgoingContext of 17 nodes", 5, func() { OutgoingContext(tenant, "x-goog-request-params", "bucket=b") }},
		{"OutgoingContext of 64 nodes", 7, func() { OutgoingContext(deep) }},
	}
	for _, c := range cases {
		if got := testing.AllocsPerRun(100, c.f); got > c.max {
			t.Errorf("%s: %v allocations, want at most %v", c.name, got, c.max)
		}
	}
}

func TestOutgoingContextEndsTheChain(t *testing.T) {
	ctx := OutgoingContext(chainOf(3), "x", "y")
	if chain(ctx) != nil {
		t.Fatal("the chain of OutgoingContext's result is not empty")
	}
	n := Append(ctx, "k", "v").(*node)
	if n.prev != nil {
		t.Fatalf("append after OutgoingContext links to %p, want nil", n.prev)
	}
}
