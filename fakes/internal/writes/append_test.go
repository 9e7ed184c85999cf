package writes

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/internal/wire"
)

func TestHandle(t *testing.T) {
	for _, tc := range []struct {
		h     string
		gen   int64
		epoch uint64
		ok    bool
	}{
		{string(Handle(12, 3)), 12, 3, true},
		{"g5w0", 5, 0, true},
		{"", 0, 0, false},
		{"x5w1", 0, 0, false},
		{"g5", 0, 0, false},
		{"g5wx", 0, 0, false},
	} {
		gen, epoch, ok := ParseHandle([]byte(tc.h))
		if ok != tc.ok || ok && (gen != tc.gen || epoch != tc.epoch) {
			t.Errorf("ParseHandle(%q) = %d, %d, %v; want %d, %d, %v", tc.h, gen, epoch, ok, tc.gen, tc.epoch, tc.ok)
		}
	}
}

// TestAppendableReopen checks who may reopen an appendable object, and
// what the writer before keeps.
func TestAppendableReopen(t *testing.T) {
	errCond := status.Error(codes.FailedPrecondition, "precondition")
	redirectedCtx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("x-goog-request-params", "bucket=b&routing_token=t%2B1"))
	for _, tc := range []struct {
		name      string
		ctx       context.Context
		spec      *wire.AppendObjectSpec
		finalized bool
		token     string // the object's routing token after a redirect
		cond      error
		code      codes.Code
		takeover  bool
		epoch     uint64
	}{
		{"takeover", nil, &wire.AppendObjectSpec{}, false, "", nil, codes.OK, true, 3},
		{"takeover, precondition fails", nil, &wire.AppendObjectSpec{}, false, "", errCond, codes.FailedPrecondition, false, 2},
		{"takeover of a finalized object", nil, &wire.AppendObjectSpec{}, true, "", nil, codes.FailedPrecondition, false, 2},
		{"the handle", nil, &wire.AppendObjectSpec{WriteHandle: &wire.BidiWriteHandle{Handle: Handle(7, 2)}}, false, "", nil, codes.OK, false, 2},
		{"the handle, finalized", nil, &wire.AppendObjectSpec{WriteHandle: &wire.BidiWriteHandle{Handle: Handle(7, 2)}}, true, "", nil, codes.OK, false, 2},
		{"a stale handle", nil, &wire.AppendObjectSpec{WriteHandle: &wire.BidiWriteHandle{Handle: Handle(7, 1)}}, false, "", nil, codes.FailedPrecondition, false, 2},
		{"another generation's handle", nil, &wire.AppendObjectSpec{WriteHandle: &wire.BidiWriteHandle{Handle: Handle(8, 2)}}, false, "", nil, codes.InvalidArgument, false, 2},
		{"no routing token", nil, &wire.AppendObjectSpec{WriteHandle: &wire.BidiWriteHandle{Handle: Handle(7, 2)}}, false, "t+1", nil, codes.Aborted, false, 2},
		{"the routing token in the spec", nil, &wire.AppendObjectSpec{RoutingToken: new("t+1")}, false, "t+1", nil, codes.OK, true, 3},
		{"the routing token in the metadata", redirectedCtx, &wire.AppendObjectSpec{}, false, "t+1", nil, codes.OK, true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			a := &Appendable{Name: "o", Gen: 7, Epoch: 2, Persisted: 4, PersistedCRC: 9, Writer: "old", RouteToken: tc.token}
			s := &State{Size: 10, CRC: 1}
			takeover, err := a.Reopen(ctx, "new", tc.spec, tc.finalized, s, func() error { return tc.cond })
			if status.Code(err) != tc.code || takeover != tc.takeover || a.Epoch != tc.epoch {
				t.Fatalf("Reopen: %v, %v, epoch %d; want %v, %v, epoch %d", takeover, err, a.Epoch, tc.code, tc.takeover, tc.epoch)
			}
			if err != nil {
				if a.Writer != "old" || s.Size != 10 {
					t.Fatalf("a failed reopen changed the writer: %+v, %+v", a, s)
				}
				return
			}
			if a.Writer != "new" || a.RouteToken != "" || a.Fenced("old", 2) == nil || a.Fenced("new", a.Epoch) != nil {
				t.Fatalf("after Reopen: %+v", a)
			}
			if want := int64(4); !tc.finalized && (s.Size != want || s.CRC != 9) {
				t.Fatalf("pending bytes kept: %+v", s)
			}
		})
	}
}

// TestAppendableRedirected checks the redirect's error and that the
// token then guards the object.
func TestAppendableRedirected(t *testing.T) {
	a := &Appendable{Name: "o", Gen: 7, Epoch: 1, Writer: "w"}
	err := a.Redirected("moved", "tok")
	st := status.Convert(err)
	if st.Code() != codes.Aborted || len(st.Proto().GetDetails()) != 1 || a.RouteToken != "tok" {
		t.Fatalf("Redirected: %v, token %q", err, a.RouteToken)
	}
	if !a.Abandon("w", false, &State{}) || a.Writer != nil || a.Abandon("w", false, &State{}) {
		t.Fatalf("Abandon: %+v", a)
	}
	if _, err := a.Reopen(context.Background(), "x", &wire.AppendObjectSpec{}, false, &State{}, func() error { return nil }); status.Code(err) != codes.Aborted {
		t.Fatalf("Reopen without the token: %v", err)
	}
}
