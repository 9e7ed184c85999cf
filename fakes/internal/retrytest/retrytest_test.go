package retrytest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

func TestParseInstruction(t *testing.T) {
	for s, want := range map[string]instruction{
		"return-503":                    {kind: instrStatus, status: 503},
		"return-reset-connection":       {kind: instrReset},
		"return-broken-stream":          {kind: instrBroken, bytes: brokenStreamBytes},
		"return-broken-stream-after-2K": {kind: instrBroken, bytes: 2 << 10},
		"return-503-after-256K":         {kind: instrStatusAfter, status: 503, bytes: 256 << 10},
		"stall-for-3s-after-1K":         {kind: instrStall, bytes: 1 << 10, stall: 3 * time.Second},
		"redirect-send-token-abc":       {kind: instrRedirect, token: "abc"},
	} {
		got, err := parseInstruction(s)
		if err != nil || got != want {
			t.Errorf("parseInstruction(%q) = %+v, %v; want %+v", s, got, err, want)
			continue
		}
		if text := instructionText(got); text != s && got.kind != instrBroken {
			t.Errorf("instructionText(%q) = %q", s, text)
		}
	}
	for _, s := range []string{"return-200", "return-abc", "return-503-after-0K", "nonsense"} {
		if _, err := parseInstruction(s); err == nil {
			t.Errorf("parseInstruction(%q) succeeded", s)
		}
	}
}

func TestGRPCCode(t *testing.T) {
	for st, want := range map[int]codes.Code{408: codes.Unavailable, 409: codes.Aborted, 503: codes.Unavailable, 504: codes.DeadlineExceeded} {
		if got, ok := grpcCode(st); !ok || got != want {
			t.Errorf("grpcCode(%d) = %v, %v; want %v", st, got, ok, want)
		}
	}
	if _, ok := grpcCode(418); ok {
		t.Error("grpcCode(418) has a code")
	}
}

// TestRegistry registers a test and consumes its instructions in order,
// each once, over its own transport only.
func TestRegistry(t *testing.T) {
	r := New(nil, []string{"storage.objects.get"})
	if r.Active() {
		t.Fatal("an empty registry is active")
	}
	if _, err := r.newRetryTest([]byte(`{"instructions": {"storage.objects.get": ["return-503"]}, "transport": "GRPC"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.newRetryTest([]byte(`{"instructions": {"storage.buckets.get": ["return-503"]}, "transport": "GRPC"}`)); err == nil {
		t.Error("a method not served over gRPC was accepted")
	}
	test, err := r.newRetryTest([]byte(`{"instructions": {"storage.objects.get": ["return-503", "return-reset-connection"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	id := r.add(test).ID
	if !r.Active() {
		t.Fatal("the registry is not active")
	}
	if _, ok := r.peek(id, "storage.objects.get", transportGRPC); ok {
		t.Error("an HTTP test applies over gRPC")
	}
	for _, want := range []instrKind{instrStatus, instrReset} {
		in, ok := r.peek(id, "storage.objects.get", transportHTTP)
		if !ok || in.kind != want || !r.take(id, "storage.objects.get", in) || r.take(id, "storage.objects.get", in) {
			t.Fatalf("peek = %+v, %v; want kind %v, taken once", in, ok, want)
		}
	}
	if res := r.get(id); res == nil || !res.Completed {
		t.Errorf("get = %+v, want completed", res)
	}
	if !r.remove(id) || r.remove(id) || r.Active() {
		t.Error("remove did not forget the test once")
	}
	// Without a test, a request passes untouched.
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "/", nil)
	req.Header.Set(Header, id)
	serve := func(http.ResponseWriter, *http.Request) error { return nil }
	if got := r.HTTP(req, "storage.objects.get", serve); got == nil || got(nil, req) != nil {
		t.Error("HTTP changed the handler of a request with no test")
	}
}
