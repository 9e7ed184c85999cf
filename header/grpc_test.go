package header_test

import (
	"context"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/objup/objup/header"
)

// received is what the test server saw in one call.
type received struct {
	tenant string      // header.FromIncoming(ctx, header.TenantKey)
	md     metadata.MD // all of the incoming metadata
}

// startServer serves every method on an in-memory connection and sends what
// each call received to the returned channel.
func startServer(t *testing.T) (*grpc.ClientConn, <-chan received) {
	t.Helper()
	calls := make(chan received, 16)
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		ctx := stream.Context()
		md, _ := metadata.FromIncomingContext(ctx)
		calls <- received{tenant: header.FromIncoming(ctx, header.TenantKey), md: md}
		if err := stream.RecvMsg(new(emptypb.Empty)); err != nil {
			return err
		}
		return stream.SendMsg(new(emptypb.Empty))
	}))
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(lis) })
	conn, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		srv.Stop()
		wg.Wait()
	})
	return conn, calls
}

func call(ctx context.Context, conn *grpc.ClientConn) error {
	return conn.Invoke(ctx, "/objup.test.Echo/Call", new(emptypb.Empty), new(emptypb.Empty))
}

// TestGRPCRoundTrip sends a chain over a real gRPC transport and reads it
// back on the server.
func TestGRPCRoundTrip(t *testing.T) {
	conn, calls := startServer(t)

	ctx := metadata.AppendToOutgoingContext(context.Background(), "k", "grpc")
	ctx = header.Append(ctx, "K", "1", "x-request-id", "r")
	ctx, err := header.WithTenant(ctx, "first")
	if err != nil {
		t.Fatal(err)
	}
	ctx = header.Append(ctx, "k", "2", "trace-bin", "\x00\r\n\xff")
	ctx, err = header.AppendChecked(ctx, "printable", " !\"#$%&'()*+,-./09:;<=>?@AZ[\\]^_`az{|}~", "Key.AZ_az-09", "v")
	if err != nil {
		t.Fatal(err)
	}
	ctx, _ = header.WithTenant(ctx, "Last-tenant_(1)")
	want := header.Flatten(ctx, "x-goog-request-params", "bucket=projects/_/buckets/b")

	if err := call(header.OutgoingContext(ctx, "x-goog-request-params", "bucket=projects/_/buckets/b"), conn); err != nil {
		t.Fatal(err)
	}
	got := <-calls
	if got.tenant != "Last-tenant_(1)" {
		t.Errorf("FromIncoming(TenantKey) = %q, want the last tenant", got.tenant)
	}
	for k, vs := range want {
		if !slices.Equal(got.md[k], vs) {
			t.Errorf("server got %s = %q, want %q", k, got.md[k], vs)
		}
	}
}

// TestGRPCRefusesUncheckedPairs shows what happens to pairs Append lets
// through and AppendChecked would refuse: the RPC fails before it is sent.
func TestGRPCRefusesUncheckedPairs(t *testing.T) {
	conn, calls := startServer(t)
	bad := [][]string{
		{"k", "a\r\nb"},
		{"k", "caf\xc3\xa9"},
		{"a b", "v"},
		{"", "v"},
	}
	for _, kv := range bad {
		if _, err := header.AppendChecked(context.Background(), kv...); err == nil {
			t.Fatalf("AppendChecked(%q) accepted it", kv)
		}
		ctx := header.OutgoingContext(header.Append(context.Background(), kv...))
		err := call(ctx, conn)
		if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "header") {
			t.Errorf("Append(%q): RPC error %v, want codes.Internal about the header", kv, err)
		}
	}
	select {
	case got := <-calls:
		t.Fatalf("server received a call with invalid metadata: %v", got.md)
	default:
	}
}
