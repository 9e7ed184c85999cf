package header_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/objup/objup/header"
)

type otherKey struct{}

// bases are the contexts the chains grow from: gRPC metadata already
// attached in each way grpc-go offers.
func bases() []struct {
	name string
	ctx  context.Context
} {
	bg := context.Background()
	newMD := metadata.NewOutgoingContext(bg, metadata.MD{
		"base-0":   {"n0"},
		"Base-1":   {"n1", "n2"}, // a map built by hand may hold upper case
		"k1":       {"n3"},
		"trace-id": {"n4"},
	})
	return []struct {
		name string
		ctx  context.Context
	}{
		{"empty", bg},
		{"NewOutgoingContext", newMD},
		{"AppendToOutgoingContext", metadata.AppendToOutgoingContext(bg, "base-0", "a0", "K2", "a1")},
		{"New+Append", metadata.AppendToOutgoingContext(
			metadata.AppendToOutgoingContext(newMD, "k1", "a2", "base-0", "a3"),
			"X-Scope-OrgID", "grpc-tenant")},
	}
}

// appendArgs returns the arguments of the i-th append of a test chain: one or
// two pairs, keys that repeat across appends and collide with the bases',
// mixed case, and a tenant now and then.
func appendArgs(i int) []string {
	k := fmt.Sprintf("k%d", i%7)
	v := fmt.Sprintf("v%d", i)
	switch i % 5 {
	case 0:
		return []string{k, v, "X-Scope-OrgID", fmt.Sprintf("tenant-%d", i)}
	case 1:
		return []string{fmt.Sprintf("Key-%d", i%3), v}
	case 2:
		return []string{"base-0", v, k, v + "b", "trace-id", v + "c"}
	default:
		return []string{k, v}
	}
}

// build appends depth times to base, both through header.Append and through
// metadata.AppendToOutgoingContext. Unrelated context layers sit between some
// of the header nodes.
func build(base context.Context, depth int) (chain, grpc context.Context) {
	chain, grpc = base, base
	for i := range depth {
		kv := appendArgs(i)
		chain = header.Append(chain, kv...)
		grpc = metadata.AppendToOutgoingContext(grpc, kv...)
		if i%4 == 3 {
			chain = context.WithValue(chain, otherKey{}, i)
		}
		if i%9 == 8 {
			chain = context.WithoutCancel(chain)
		}
	}
	return chain, grpc
}

// normal maps nil to an empty MD, which carries the same pairs.
func normal(md metadata.MD) metadata.MD {
	if md == nil {
		return metadata.MD{}
	}
	return md
}

func outgoing(ctx context.Context) metadata.MD {
	md, _ := metadata.FromOutgoingContext(ctx)
	return normal(md)
}

func diffMD(got, want metadata.MD) string {
	got, want = normal(got), normal(want)
	if reflect.DeepEqual(got, want) {
		return ""
	}
	keys := maps.Clone(got)
	maps.Copy(keys, want)
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if !slices.Equal(got[k], want[k]) {
			fmt.Fprintf(&b, "\n  %s: got %q, want %q", k, got[k], want[k])
		}
	}
	return b.String()
}

func TestFlattenMatchesGRPC(t *testing.T) {
	extras := [][]string{nil, {"X-Goog-Request-Params", "bucket=projects/_/buckets/b", "k1", "extra"}}
	for _, base := range bases() {
		for _, extra := range extras {
			t.Run(fmt.Sprintf("%s/extra=%d", base.name, len(extra)/2), func(t *testing.T) {
				for depth := 0; depth <= 64; depth++ {
					chain, grpc := build(base.ctx, depth)
					if len(extra) > 0 {
						grpc = metadata.AppendToOutgoingContext(grpc, extra...)
					}
					want := outgoing(grpc)
					if d := diffMD(header.Flatten(chain, extra...), want); d != "" {
						t.Fatalf("depth %d: Flatten differs from grpc:%s", depth, d)
					}
					out := header.OutgoingContext(chain, extra...)
					if d := diffMD(outgoing(out), want); d != "" {
						t.Fatalf("depth %d: OutgoingContext differs from grpc:%s", depth, d)
					}
					// Flattening the result again repeats nothing.
					if d := diffMD(outgoing(header.OutgoingContext(out)), want); d != "" {
						t.Fatalf("depth %d: OutgoingContext twice differs from grpc:%s", depth, d)
					}
					if d := diffMD(header.Flatten(out), want); d != "" {
						t.Fatalf("depth %d: Flatten of OutgoingContext differs from grpc:%s", depth, d)
					}
					// Appends after OutgoingContext come after its pairs.
					more := header.Append(out, "k1", "after", "new", "n")
					grpcMore := metadata.AppendToOutgoingContext(grpc, "k1", "after", "new", "n")
					if d := diffMD(outgoing(header.OutgoingContext(more)), outgoing(grpcMore)); d != "" {
						t.Fatalf("depth %d: Append after OutgoingContext differs from grpc:%s", depth, d)
					}
					// Tenant agrees with the flattened order.
					tenants := want[header.TenantKey]
					got, ok := header.Tenant(chain)
					if ok != (len(tenants) > 0) || ok && got != tenants[len(tenants)-1] {
						t.Fatalf("depth %d: Tenant = %q, %v; flattened tenants %q", depth, got, ok, tenants)
					}
					if got2, ok2 := header.Tenant(out); got2 != got || ok2 != ok {
						t.Fatalf("depth %d: Tenant after OutgoingContext = %q, %v; want %q, %v", depth, got2, ok2, got, ok)
					}
				}
			})
		}
	}
}

func TestFlattenAfterGRPCAppendOnTop(t *testing.T) {
	// gRPC metadata attached after the chain still comes first (see Order in
	// the package documentation).
	ctx := header.Append(context.Background(), "k", "chain")
	ctx = metadata.AppendToOutgoingContext(ctx, "k", "grpc")
	want := metadata.MD{"k": {"grpc", "chain"}}
	if d := diffMD(header.Flatten(ctx), want); d != "" {
		t.Fatalf("Flatten:%s", d)
	}
	// NewOutgoingContext replaces the gRPC metadata, not the chain.
	replaced := metadata.NewOutgoingContext(ctx, metadata.Pairs("k", "new"))
	if d := diffMD(header.Flatten(replaced), metadata.MD{"k": {"new", "chain"}}); d != "" {
		t.Fatalf("Flatten after NewOutgoingContext:%s", d)
	}
	// On top of OutgoingContext, it replaces what OutgoingContext sent, as
	// it replaces earlier appends in grpc.
	out := header.OutgoingContext(ctx)
	out = metadata.NewOutgoingContext(out, metadata.Pairs("z", "1"))
	if d := diffMD(header.Flatten(out), metadata.MD{"z": {"1"}}); d != "" {
		t.Fatalf("Flatten after NewOutgoingContext:%s", d)
	}
	if got, ok := header.Tenant(out); ok {
		t.Fatalf("Tenant = %q after NewOutgoingContext replaced everything", got)
	}
}

func TestFlattenResultIsOwned(t *testing.T) {
	ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("b", "0"))
	ctx = header.Append(ctx, "a", "1", "b", "2", "c", "3")
	ctx = header.Append(ctx, "a", "4")
	want := header.Flatten(ctx, "e", "5")

	md := header.Flatten(ctx, "e", "5")
	for k, v := range md {
		v[0] = "changed"
		md[k] = append(v, "more")
	}
	md["new"] = []string{"x"}

	if d := diffMD(header.Flatten(ctx, "e", "5"), want); d != "" {
		t.Fatalf("changing a result changed the next one:%s", d)
	}
	if d := diffMD(outgoing(ctx), metadata.Pairs("b", "0")); d != "" {
		t.Fatalf("changing a result changed the gRPC metadata in ctx:%s", d)
	}
}

func TestAppendCopiesArguments(t *testing.T) {
	for _, kv := range [][]string{{"a", "1"}, {"a", "1", "b", "2"}} {
		ctx := header.Append(context.Background(), kv...)
		want := header.Flatten(ctx)
		for i := range kv {
			kv[i] = "changed"
		}
		if d := diffMD(header.Flatten(ctx), want); d != "" {
			t.Fatalf("changing the argument of Append changed the chain:%s", d)
		}
	}
}

func TestAppendNothing(t *testing.T) {
	ctx := context.Background()
	if got := header.Append(ctx); got != ctx {
		t.Fatalf("Append(ctx) = %v, want ctx itself", got)
	}
	if got, err := header.AppendChecked(ctx); got != ctx || err != nil {
		t.Fatalf("AppendChecked(ctx) = %v, %v; want ctx itself, nil", got, err)
	}
	if got := header.OutgoingContext(ctx); got != ctx {
		t.Fatalf("OutgoingContext of an empty ctx = %v, want ctx itself", got)
	}
	if md := header.Flatten(ctx); md == nil || len(md) != 0 {
		t.Fatalf("Flatten of an empty ctx = %#v, want an empty, non-nil MD", md)
	}
}

func TestForkedBranchesAreIsolated(t *testing.T) {
	root := header.Append(context.Background(), "root", "r")
	parent := header.Append(root, "shared", "s")
	a := header.Append(parent, "branch", "a", "shared", "a")
	b := header.Append(parent, "branch", "b")
	b2 := header.Append(b, "deeper", "b2")

	cases := []struct {
		name string
		ctx  context.Context
		want metadata.MD
	}{
		{"root", root, metadata.MD{"root": {"r"}}},
		{"parent", parent, metadata.MD{"root": {"r"}, "shared": {"s"}}},
		{"a", a, metadata.MD{"root": {"r"}, "shared": {"s", "a"}, "branch": {"a"}}},
		{"b", b, metadata.MD{"root": {"r"}, "shared": {"s"}, "branch": {"b"}}},
		{"b2", b2, metadata.MD{"root": {"r"}, "shared": {"s"}, "branch": {"b"}, "deeper": {"b2"}}},
	}
	for _, c := range cases {
		if d := diffMD(header.Flatten(c.ctx), c.want); d != "" {
			t.Errorf("%s:%s", c.name, d)
		}
	}
}

func TestConcurrentBranches(t *testing.T) {
	parent, _ := build(context.Background(), 20)
	want := header.Flatten(parent)
	const goroutines, depth = 8, 40
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			ctx := parent
			key := fmt.Sprintf("branch-%d", g)
			for i := range depth {
				ctx = header.Append(ctx, key, fmt.Sprint(i))
			}
			md := header.Flatten(ctx)
			if len(md[key]) != depth {
				t.Errorf("branch %d: %d values of %s, want %d", g, len(md[key]), key, depth)
			}
			for other := range goroutines {
				if k := fmt.Sprintf("branch-%d", other); other != g && md[k] != nil {
					t.Errorf("branch %d sees %s", g, k)
				}
			}
		})
	}
	wg.Wait()
	if d := diffMD(header.Flatten(parent), want); d != "" {
		t.Fatalf("branches changed their parent:%s", d)
	}
}

func TestConcurrentReaders(t *testing.T) {
	base := bases()[3].ctx
	ctx, grpc := build(base, 64)
	want := outgoing(grpc)
	wantTenant := want[header.TenantKey][len(want[header.TenantKey])-1]
	wantHTTP := http.Header{}
	header.SetHTTP(ctx, wantHTTP)

	const goroutines, rounds = 8, 50
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for i := range rounds {
				if d := diffMD(header.Flatten(ctx), want); d != "" {
					t.Errorf("Flatten:%s", d)
					return
				}
				if d := diffMD(outgoing(header.OutgoingContext(ctx)), want); d != "" {
					t.Errorf("OutgoingContext:%s", d)
					return
				}
				if got, _ := header.Tenant(ctx); got != wantTenant {
					t.Errorf("Tenant = %q, want %q", got, wantTenant)
					return
				}
				h := http.Header{}
				header.SetHTTP(ctx, h)
				if !reflect.DeepEqual(h, wantHTTP) {
					t.Errorf("SetHTTP = %v, want %v", h, wantHTTP)
					return
				}
				own := header.Append(ctx, "own", fmt.Sprint(i))
				if got := header.Flatten(own)["own"]; !slices.Equal(got, []string{fmt.Sprint(i)}) {
					t.Errorf("own branch: %q", got)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestPanicsOnOddPairs(t *testing.T) {
	ctx := context.Background()
	cases := map[string]func(){
		//lint:ignore SA5012 an odd count is what the test hands over
		"Append": func() { header.Append(ctx, "a") },
		//lint:ignore SA5012 an odd count is what the test hands over
		"Append3": func() { header.Append(ctx, "a", "b", "c") },
		//lint:ignore SA5012 an odd count is what the test hands over
		"Flatten": func() { header.Flatten(ctx, "a") },
		//lint:ignore SA5012 an odd count is what the test hands over
		"OutgoingContext": func() { header.OutgoingContext(ctx, "a", "b", "c") },
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, "odd number") {
					t.Fatalf("recovered %v, want a panic about an odd number of strings", r)
				}
			}()
			f()
		})
	}
}

func TestAppendChecked(t *testing.T) {
	long := strings.Repeat("k", 100)
	cases := []struct {
		name    string
		kv      []string
		wantErr string // substring; "" means accepted
	}{
		{"pair", []string{"x-request-id", "abc-123"}, ""},
		{"two pairs", []string{"a", "1", "b", "2"}, ""},
		{"upper-case key", []string{"X-Request-ID", "abc"}, ""},
		{"all key characters", []string{"azAZ09-_.", "v"}, ""},
		{"printable ASCII", []string{"k", " !\"#$%&'()*+,-./09:;<=>?@AZ[\\]^_`az{|}~"}, ""},
		{"empty value", []string{"k", ""}, ""},
		{"binary value", []string{"trace-bin", "\x00\r\n\xff"}, ""},
		{"binary value upper-case key", []string{"Trace-BIN", "\x00\xff"}, ""},
		{"odd", []string{"k"}, "odd number"},
		{"odd after pairs", []string{"a", "1", "b"}, "odd number"},
		{"empty key", []string{"", "v"}, "pair 0: empty key"},
		{"space in key", []string{"a", "1", "b c", "v"}, `pair 1: key "b c" has byte 0x20`},
		{"colon in key", []string{":authority", "v"}, "byte 0x3a"},
		{"slash in key", []string{"a/b", "v"}, "byte 0x2f"},
		{"non-ASCII key", []string{"clé", "v"}, "byte 0xc3"},
		{"Kelvin sign", []string{"\u212a", "v"}, "byte 0xe2"},
		{"newline in key", []string{"a\nb", "v"}, "byte 0x0a"},
		{"long key quoted short", []string{long + " ", "v"}, `"...`},
		{"reserved key", []string{"grpc-timeout", "1S"}, "reserved"},
		{"reserved key upper-case", []string{"GRPC-Status", "0"}, "reserved"},
		{"CR in value", []string{"k", "a\rb"}, `value of key "k" has a CR or LF at byte 1`},
		{"LF in value", []string{"k", "a\nSet-Cookie: x"}, "CR or LF"},
		{"NUL in value", []string{"k", "a\x00"}, "control character 0x00"},
		{"tab in value", []string{"k", "a\tb"}, "control character 0x09"},
		{"DEL in value", []string{"k", "\x7f"}, "control character 0x7f"},
		{"UTF-8 in value", []string{"k", "café"}, "non-ASCII byte 0xc3"},
		{"bin suffix only", []string{"-bin", "\xff"}, ""},
		{"bin is not a suffix", []string{"k-bin-x", "\xff"}, "non-ASCII"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parent := header.Append(context.Background(), "p", "0")
			want := header.Flatten(parent)
			ctx, err := header.AppendChecked(parent, c.kv...)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.HasPrefix(err.Error(), "header: ") {
					t.Fatalf("err = %v, want one containing %q", err, c.wantErr)
				}
				if ctx != parent {
					t.Fatalf("on error, ctx = %v, want the parent unchanged", ctx)
				}
				for i := 1; i < len(c.kv); i += 2 {
					if len(c.kv[i]) >= 3 && strings.Contains(err.Error(), c.kv[i]) {
						t.Fatalf("err %q shows a value", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v, want nil", err)
			}
			for i := 0; i < len(c.kv); i += 2 {
				want.Append(c.kv[i], c.kv[i+1])
			}
			if d := diffMD(header.Flatten(ctx), want); d != "" {
				t.Fatalf("Flatten:%s", d)
			}
		})
	}
}

func TestWithTenant(t *testing.T) {
	cases := []struct {
		id      string
		wantErr string
	}{
		{"tenant-1", ""},
		{"Team_A.prod", ""},
		{"a!b*c'(d)", ""},
		{"0", ""},
		{"...", ""},
		{strings.Repeat("t", header.MaxTenantLen), ""},
		{"", "empty tenant ID"},
		{strings.Repeat("t", header.MaxTenantLen+1), "151 bytes; the limit is 150"},
		{".", "not allowed"},
		{"..", "not allowed"},
		{"a b", "byte 0x20 at 1"},
		{" a", "byte 0x20 at 0"},
		{"a|b", "byte 0x7c"},
		{"a/b", "byte 0x2f"},
		{"a:b", "byte 0x3a"},
		{"a\r\nb", "byte 0x0d"},
		{"a\x00", "byte 0x00"},
		{"é", "byte 0xc3"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%.20q", c.id), func(t *testing.T) {
			parent := header.Append(context.Background(), header.TenantKey, "before")
			ctx, err := header.WithTenant(parent, c.id)
			got, _ := header.Tenant(ctx)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, c.wantErr)
				}
				if ctx != parent || got != "before" {
					t.Fatalf("on error: ctx changed, Tenant = %q", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if got != c.id {
				t.Fatalf("Tenant = %q, want %q", got, c.id)
			}
		})
	}
}

func TestTenant(t *testing.T) {
	bg := context.Background()
	must := func(ctx context.Context, err error) context.Context {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return ctx
	}
	a := must(header.WithTenant(bg, "a"))
	cases := []struct {
		name string
		ctx  context.Context
		want string // "" means none
	}{
		{"none", bg, ""},
		{"one", a, "a"},
		{"last node wins", must(header.WithTenant(a, "b")), "b"},
		{"last in a node wins", header.Append(a, header.TenantKey, "c", "k", "v", "X-Scope-OrgID", "d"), "d"},
		{"below other appends", header.Append(context.WithValue(header.Append(a, "k", "v"), otherKey{}, 1), "k2", "v"), "a"},
		{"gRPC only", metadata.AppendToOutgoingContext(bg, "X-Scope-OrgID", "g1", header.TenantKey, "g2"), "g2"},
		{"chain after gRPC", header.Append(metadata.AppendToOutgoingContext(bg, header.TenantKey, "g"), header.TenantKey, "c"), "c"},
		{"gRPC below a chain without tenant", header.Append(metadata.NewOutgoingContext(bg, metadata.Pairs(header.TenantKey, "g")), "k", "v"), "g"},
		{"after OutgoingContext", header.OutgoingContext(must(header.WithTenant(a, "e")), "x", "y"), "e"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := header.Tenant(c.ctx)
			if got != c.want || ok != (c.want != "") {
				t.Fatalf("Tenant = %q, %v; want %q", got, ok, c.want)
			}
			flat := header.Flatten(c.ctx)[header.TenantKey]
			if ok && flat[len(flat)-1] != got || !ok && len(flat) > 0 {
				t.Fatalf("Tenant = %q, %v; Flatten has %q", got, ok, flat)
			}
		})
	}
}

func TestSetHTTP(t *testing.T) {
	ctx := metadata.AppendToOutgoingContext(context.Background(), "from-grpc", "g")
	ctx = header.Append(ctx, "X-Request-ID", "r1", "k", "1")
	ctx, _ = header.WithTenant(ctx, "t1")
	ctx = header.Append(ctx, "k", "2", "trace-bin", "\x00\x01\xfe\xff")

	h := http.Header{"K": {"old"}, "Accept": {"*/*"}}
	header.SetHTTP(ctx, h)
	want := http.Header{
		"Accept":        {"*/*"},
		"From-Grpc":     {"g"},
		"X-Request-Id":  {"r1"},
		"K":             {"1", "2"},
		"X-Scope-Orgid": {"t1"},
		"Trace-Bin":     {"AAH+/w"},
	}
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("SetHTTP wrote %v, want %v", h, want)
	}
	if got := h.Get(header.TenantKey); got != "t1" {
		t.Fatalf("h.Get(TenantKey) = %q", got)
	}
}

func TestSetHTTPInvalidValueIsRefused(t *testing.T) {
	// Append does not validate; net/http refuses to send the header.
	ctx := header.Append(context.Background(), "k", "a\r\nInjected: x")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:1/", nil)
	if err != nil {
		t.Fatal(err)
	}
	header.SetHTTP(ctx, req.Header)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("request with CR LF in a header value was sent")
	}
	if !strings.Contains(err.Error(), "invalid header field value") {
		t.Fatalf("err = %v, want net/http's invalid header field value", err)
	}
}

func TestFromIncoming(t *testing.T) {
	md := metadata.MD{
		header.TenantKey: {"first", "last"},
		"single":         {"s"},
		"Upper-Key":      {"u"}, // a map built by hand may hold upper case
		"empty":          {},
	}
	ctx := metadata.NewIncomingContext(context.Background(), md)
	cases := []struct{ key, want string }{
		{header.TenantKey, "last"},
		{"X-Scope-OrgID", "last"},
		{"single", "s"},
		{"upper-key", "u"},
		{"empty", ""},
		{"missing", ""},
	}
	for _, c := range cases {
		if got := header.FromIncoming(ctx, c.key); got != c.want {
			t.Errorf("FromIncoming(%q) = %q, want %q", c.key, got, c.want)
		}
	}
	if got := header.FromIncoming(context.Background(), header.TenantKey); got != "" {
		t.Errorf("FromIncoming without metadata = %q", got)
	}
	// Outgoing metadata is not incoming.
	out := header.OutgoingContext(header.Append(context.Background(), "single", "o"))
	if got := header.FromIncoming(out, "single"); got != "" {
		t.Errorf("FromIncoming read outgoing metadata: %q", got)
	}
}

func TestChainIsAContext(t *testing.T) {
	parent, cancel := context.WithTimeout(context.WithValue(context.Background(), otherKey{}, "v"), time.Hour)
	ctx := header.Append(parent, "k", "secret-value")
	if ctx.Value(otherKey{}) != "v" {
		t.Fatal("Value of another key is lost")
	}
	got, _ := ctx.Deadline()
	want, _ := parent.Deadline()
	if !got.Equal(want) {
		t.Fatalf("Deadline = %v, want the parent's %v", got, want)
	}
	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()
	after := make(chan struct{})
	stop := context.AfterFunc(ctx, func() { close(after) })
	defer stop()

	cancel()
	for _, c := range []context.Context{ctx, child} {
		select {
		case <-c.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("cancelling the parent did not reach the chain")
		}
		if c.Err() != context.Canceled {
			t.Fatalf("Err = %v", c.Err())
		}
	}
	<-after
	if s := fmt.Sprint(ctx); strings.Contains(s, "secret-value") || !strings.Contains(s, "WithHeaders(1 pairs)") {
		t.Fatalf("String = %q", s)
	}
}

func TestValidate(t *testing.T) {
	base := context.Background()
	tests := []struct {
		name    string
		ctx     context.Context
		wantErr string
	}{
		{"empty", base, ""},
		{"good pairs", header.Append(header.Append(base, "x-request-id", "abc"), "X-Scope-OrgID", "acme", "k-bin", "\x00\xff"), ""},
		{"newline in value", header.Append(base, "x-request-id", "a\nb"), `"x-request-id" has a CR or LF`},
		{"bad value under good ones", header.Append(header.Append(base, "x-request-id", "a\x01"), "x-scope-orgid", "acme"), "control character"},
		{"non-ASCII value", header.Append(base, "k", "é"), "non-ASCII"},
		{"bad key", header.Append(base, "bad key", "v"), "keys take"},
		{"reserved key", header.Append(base, "grpc-timeout", "1S"), "reserved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := header.Validate(tt.ctx)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "a\nb") {
				t.Fatalf("error %q shows the value", err)
			}
		})
	}
}
