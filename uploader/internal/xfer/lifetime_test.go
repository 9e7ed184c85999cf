package xfer

import (
	"context"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/internal/wire"
)

// countingPool records gRPC's releases of a payload.
type countingPool struct{ puts atomic.Int32 }

func (p *countingPool) Get(int) *[]byte { return nil }
func (p *countingPool) Put(*[]byte)     { p.puts.Add(1) }

// TestGRPCDropsTornDownFrames pins the grpc-go behaviour that outMsg's forced
// release exists for (grpc-go v1.85.0, internal/transport/controlbuf.go): a
// data frame that reaches gRPC's writer goroutine (loopy) after its stream
// was cleaned up is dropped by preprocessData without being freed, so its
// payload is never released. That happens when SendMsg passed the stream's
// state check, then waited for write quota, and woke up after the server's
// status had cleaned the stream up.
//
// The test fails a stream while a client writes to it as fast as it can,
// many times, and counts the messages gRPC took and never released once a
// later call on the same connection completed. If it fails after a grpc-go
// upgrade, gRPC now frees such frames: lifetime's forced release
// (forceRelease, and wait's orphanGrace) may then go.
func TestGRPCDropsTornDownFrames(t *testing.T) {
	if grpc.Version != "1.85.0" {
		t.Fatalf("grpc-go %s: re-check that a frame queued after its stream's cleanup is still never freed (this test, run with -count=20), then update the version here and in lifetime.go", grpc.Version)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, ss grpc.ServerStream) error {
		var m wire.WriteObjectRequest
		_ = ss.RecvMsg(&m) // one message, then fail the stream
		return status.Error(codes.FailedPrecondition, "refused")
	}))
	go srv.Serve(ln)
	defer srv.Stop()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("the race that drops frames needs two threads")
	}
	payload := make([]byte, 32<<10)
	var taken, released countingPool
	for batch := range 10 {
		for range 100 {
			st, err := conn.NewStream(ctx, &wire.WriteObjectStream, wire.MethodWriteObject, wire.CallOption(), grpc.MaxRetryRPCBufferSize(0))
			if err != nil {
				t.Fatal(err)
			}
			for range 64 {
				msg := &wire.WriteMsg{Req: &wire.WriteObjectRequest{}, Data: &payload, Release: &released}
				err := st.SendMsg(msg)
				if msg.Marshaled() {
					taken.puts.Add(1)
				}
				if err != nil {
					break
				}
			}
			var resp wire.WriteObjectResponse
			if err := st.RecvMsg(&resp); status.Code(err) != codes.FailedPrecondition {
				t.Fatalf("stream ended with %v, want the server's FailedPrecondition", err)
			}
		}
		// A later call completes on the same connection: loopy went past
		// every frame queued before it.
		if err := conn.Invoke(ctx, wire.MethodQueryWriteStatus, &wire.QueryWriteStatusRequest{}, &wire.QueryWriteStatusResponse{}); status.Code(err) != codes.FailedPrecondition {
			t.Fatalf("later call: %v", err)
		}
		if lost := taken.puts.Load() - released.puts.Load(); lost > 0 {
			t.Logf("after %d streams: %d messages taken by gRPC, %d never released", (batch+1)*100, taken.puts.Load(), lost)
			return
		}
	}
	t.Fatalf("grpc-go released all %d messages of 1000 torn-down streams: the forced release in lifetime.go may no longer be needed", taken.puts.Load())
}
