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

// A test seeds the store directly, then inspects what a client did, without
// requests of its own.
func ExampleServer_PutObject() {
	srv, err := fakes.New(fakes.WithBucket("logs"))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	attrs, err := srv.PutObject(fakes.Object{
		ObjectAttrs: fakes.ObjectAttrs{Bucket: "logs", Name: "seed.txt", ContentType: "text/plain", Tenant: "acme"},
		Content:     []byte("seeded"),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(attrs.Name, attrs.Size, attrs.Metageneration, attrs.StorageClass)

	// The JSON API serves it like any other object.
	resp, err := http.Get(srv.HTTPURL() + "/storage/v1/b/logs/o/seed.txt?alt=media")
	if err != nil {
		log.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(string(b), resp.Header.Get("X-Goog-Generation") == fmt.Sprint(attrs.Generation))

	o, err := srv.Object("logs", "seed.txt")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(o.Content), o.ContentType, o.Tenant)
	for _, u := range srv.Usage() {
		fmt.Println(u.Tenant, u.Objects, u.Bytes)
	}
	// Output:
	// seed.txt 6 1 STANDARD
	// seeded true
	// seeded text/plain acme
	// acme 1 6
}

// With a small call log, Calls keeps the most recent calls while CallCounts
// counts them all.
func ExampleWithCallLog() {
	srv, err := fakes.New(fakes.WithBucket("logs"), fakes.WithCallLog(2))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	for _, name := range []string{"a", "b", "c"} {
		req, _ := http.NewRequest("POST", srv.HTTPURL()+"/upload/storage/v1/b/logs/o?uploadType=media&name="+name, strings.NewReader(name))
		req.Header.Set("X-Scope-OrgID", "acme")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
	}
	for _, c := range srv.Calls() {
		fmt.Println(c.Method, c.Object, c.Tenant)
	}
	for _, c := range srv.CallCounts() {
		fmt.Println(c.Method, c.Tenant, c.Code, c.Count)
	}
	// Output:
	// objects.insert b acme
	// objects.insert c acme
	// objects.insert acme OK 3
}
