package fakes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	"github.com/googleapis/gax-go/v2"
	"github.com/googleapis/gax-go/v2/callctx"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/objup/objup/fakes"
)

// A retry test, as the official clients' retry conformance suites create
// them, makes the next GetObject call that names it fail with Unavailable
// (the gRPC code of HTTP 503); the official client retries, and the test is
// completed once its instructions are consumed.
func Example_retryTest() {
	srv, err := fakes.New(fakes.WithBucket("logs"), fakes.WithCallLog(100))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	if _, err := srv.PutObject(fakes.Object{ObjectAttrs: fakes.ObjectAttrs{Bucket: "logs", Name: "a.txt"}, Content: []byte("hello")}); err != nil {
		log.Fatal(err)
	}

	// Arm the test on the HTTP port.
	resp, err := http.Post(srv.HTTPURL()+"/retry_test", "application/json", strings.NewReader(
		`{"instructions": {"storage.objects.get": ["return-503"]}, "transport": "GRPC"}`))
	if err != nil {
		log.Fatal(err)
	}
	var test struct {
		ID        string
		Completed bool
	}
	err = json.NewDecoder(resp.Body).Decode(&test)
	resp.Body.Close()
	if err != nil {
		log.Fatal(err)
	}

	// Calls that carry the test's id consume its instructions.
	ctx := callctx.SetHeaders(context.Background(), "x-retry-test-id", test.ID)
	client, err := storage.NewGRPCClient(ctx,
		option.WithEndpoint(srv.GRPCAddr()),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
		storage.WithDisabledClientMetrics())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	client.SetRetry(storage.WithBackoff(gax.Backoff{Initial: time.Millisecond}))
	attrs, err := client.Bucket("logs").Object("a.txt").Attrs(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("size", attrs.Size)
	for _, c := range srv.Calls() {
		fmt.Println(c.Method, c.Code)
	}

	resp, err = http.Get(srv.HTTPURL() + "/retry_test/" + test.ID)
	if err != nil {
		log.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&test)
	resp.Body.Close()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("completed:", test.Completed)
	// Output:
	// size 5
	// GetObject Unavailable
	// GetObject OK
	// completed: true
}
