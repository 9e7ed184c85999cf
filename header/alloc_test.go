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
		if n.prev != head || n.depth != depth+1 || n.pairs != depth+1 {
			t.Fatalf("depth %d: node links to %p (head %p), depth %d, pairs %d", depth, n.prev, head, n.depth, n.pairs)
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
	if n.prev != nil || n.depth != 1 || n.pairs != 1 {
		t.Fatalf("append after OutgoingContext: prev %p, depth %d, pairs %d", n.prev, n.depth, n.pairs)
	}
}
