package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes/internal/cmdtest"
	"github.com/objup/objup/internal/wire"
)

// TestRunRetryTest drives the retry test API on fakegcs's HTTP port: an
// instruction armed over HTTP fails the gRPC call that names the test.
func TestRunRetryTest(t *testing.T) {
	p := cmdtest.Start(t, run, "-bucket", "one")
	grpcAddr, httpURL := addrs(t, scan(p.Stdout, nil))
	defer http.DefaultClient.CloseIdleConnections()

	resp, err := http.Post(httpURL+"/retry_test", "application/json",
		strings.NewReader(`{"instructions": {"storage.objects.get": ["return-503"]}, "transport": "GRPC"}`))
	if err != nil {
		t.Fatal(err)
	}
	var rt struct {
		ID        string
		Completed bool
	}
	err = json.NewDecoder(resp.Body).Decode(&rt)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || rt.ID == "" {
		t.Fatalf("POST /retry_test: %s, %v", resp.Status, err)
	}

	cc, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	cctx, ccancel := context.WithTimeout(metadata.AppendToOutgoingContext(t.Context(), "x-retry-test-id", rt.ID), 30*time.Second)
	defer ccancel()
	req := &wire.GetObjectRequest{Bucket: "projects/_/buckets/one", Object: "missing"}
	for _, want := range []codes.Code{codes.Unavailable, codes.NotFound} {
		if err := cc.Invoke(cctx, wire.MethodGetObject, req, &wire.Object{}); status.Code(err) != want {
			t.Fatalf("GetObject: %v, want %v", err, want)
		}
	}

	resp, err = http.Get(httpURL + "/retry_test/" + rt.ID)
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&rt)
	resp.Body.Close()
	if err != nil || !rt.Completed {
		t.Fatalf("GET /retry_test: %+v, %v", rt, err)
	}
	p.StopOK(t)
}
