package fakes_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"strings"

	"cloud.google.com/go/storage"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/objup/objup/fakes"
)

// An object uploaded over the JSON API is read back over gRPC by the
// official client, and the request log shows both calls.
func Example() {
	srv, err := fakes.New(fakes.WithBucket("logs"))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	// Upload over the JSON API.
	resp, err := http.Post(srv.HTTPURL()+"/upload/storage/v1/b/logs/o?uploadType=media&name=hello.txt",
		"text/plain", strings.NewReader("hello, gcs"))
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()

	// Read over gRPC.
	ctx := context.Background()
	client, err := storage.NewGRPCClient(ctx,
		option.WithEndpoint(srv.GRPCAddr()),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
		storage.WithDisabledClientMetrics())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	r, err := client.Bucket("logs").Object("hello.txt").NewReader(ctx)
	if err != nil {
		log.Fatal(err)
	}
	b, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(b))
	for _, c := range srv.Calls() {
		fmt.Println(c.Method, c.Bucket, c.Object, c.Code)
	}
	// Output:
	// hello, gcs
	// objects.insert logs hello.txt OK
	// ReadObject logs hello.txt OK
}

// A fault rule fails the first GetObject call with UNAVAILABLE; the
// official client retries it (reads are idempotent) and succeeds.
func ExampleServer_FailCall() {
	srv, err := fakes.New(fakes.WithBucket("logs"))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	// Seed the store directly: no request.
	if _, err := srv.PutObject(fakes.Object{ObjectAttrs: fakes.ObjectAttrs{Bucket: "logs", Name: "a"}, Content: []byte("abc")}); err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	client, err := storage.NewGRPCClient(ctx,
		option.WithEndpoint(srv.GRPCAddr()),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
		storage.WithDisabledClientMetrics())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	srv.FailCall(fakes.MethodGetObject, 1, codes.Unavailable)
	attrs, err := client.Bucket("logs").Object("a").Attrs(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(attrs.Name, attrs.Size)
	for _, c := range srv.Calls() {
		fmt.Println(c.Method, c.Object, c.Code)
	}
	// Output:
	// a 3
	// GetObject a Unavailable
	// GetObject a OK
}
