package frontend_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/fakes/faultproxy"
	"github.com/objup/objup/fakes/frontend"
	"github.com/objup/objup/internal/wire"
)

// TestChain: client, fault proxy, HAProxy, fake, as on the path to GCS: a
// gRPC write goes through, and a whole JSON upload the path held when its
// client reset is stored once delivered (faultproxy.Deliver), never when
// dropped.
func TestChain(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket(bucket))
	grpcFE := frontend.StartTest(t, srv.GRPCAddr(), frontend.GRPC)
	httpFE := frontend.StartTest(t, strings.TrimPrefix(srv.HTTPURL(), "http://"), frontend.HTTP1)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	gp, err := faultproxy.New(grpcFE)
	if err != nil {
		t.Fatal(err)
	}
	defer gp.Close()
	cc, err := grpc.NewClient(gp.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	st, err := wire.NewWriteObjectStream(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	st.Send(&wire.WriteObjectRequest{
		FirstMessage: &wire.WriteObjectRequest_WriteObjectSpec{WriteObjectSpec: &wire.WriteObjectSpec{
			Resource: &wire.Object{Bucket: "projects/_/buckets/" + bucket, Name: "chain"}}},
		Data:        &wire.WriteObjectRequest_ChecksummedData{ChecksummedData: &wire.ChecksummedData{Content: []byte("chained")}},
		FinishWrite: true,
	})
	if resp, err := st.CloseAndRecv(); err != nil || resp.GetResource().GetSize() != 7 {
		t.Fatalf("WriteObject through the proxy and HAProxy: %v, %v", resp, err)
	}

	for _, tc := range []struct {
		held   faultproxy.Held
		stored bool
	}{
		{faultproxy.Drop, false},
		{faultproxy.Deliver, true},
	} {
		t.Run(tc.held.String(), func(t *testing.T) {
			p, err := faultproxy.New(httpFE, faultproxy.WithHeld(tc.held))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			p.Inject(faultproxy.Fault{Kind: faultproxy.Stall, Dir: faultproxy.Up, Stall: 200 * time.Millisecond})
			c, err := net.Dial("tcp", p.Addr())
			if err != nil {
				t.Fatal(err)
			}
			name := "held-" + tc.held.String()
			body := strings.Repeat("x", 10000)
			req := fmt.Sprintf("POST /upload/storage/v1/b/%s/o?uploadType=media&name=%s HTTP/1.1\r\nHost: fe\r\nContent-Length: %d\r\n\r\n%s", bucket, name, len(body), body)
			if _, err := c.Write([]byte(req)); err != nil {
				t.Fatal(err)
			}
			for p.Stats().Stalls == 0 {
				select {
				case <-ctx.Done():
					t.Fatal("the stall never fired")
				case <-time.After(time.Millisecond):
				}
			}
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
			if err := p.Settle(ctx); err != nil {
				t.Fatal(err)
			}
			if !tc.stored {
				if _, err := srv.Object(bucket, name); err == nil {
					t.Fatal("a dropped request was stored")
				}
				return
			}
			for {
				if o, err := srv.Object(bucket, name); err == nil {
					if string(o.Content) != body {
						t.Fatalf("stored %d bytes", len(o.Content))
					}
					return
				}
				select {
				case <-ctx.Done():
					t.Fatal("the delivered request was never stored")
				case <-time.After(5 * time.Millisecond):
				}
			}
		})
	}
}
