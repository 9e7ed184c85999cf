package uploader_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"strings"

	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/header"
	"github.com/objup/objup/uploader"
)

// startFake starts an in-process fake GCS with bucket "demo" and returns a
// client dialled to it. A real program passes credentials options instead (or
// none, for Application Default Credentials).
func startFake() (*fakes.Server, *uploader.Client) {
	srv, err := fakes.New(fakes.WithBucket("demo"))
	if err != nil {
		log.Fatal(err)
	}
	c, err := uploader.NewClient(context.Background(),
		option.WithEndpoint(srv.GRPCAddr()),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		log.Fatal(err)
	}
	return srv, c
}

func ExampleClient_Upload() {
	srv, c := startFake()
	defer srv.Close()
	defer c.Close()

	attrs, err := c.Upload(context.Background(), "demo", "greeting.txt", strings.NewReader("hello, objects"),
		uploader.WithDoesNotExist())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(attrs.Name, attrs.Size, attrs.ContentType)
	// Output: greeting.txt 14 text/plain; charset=utf-8
}

func ExampleWithBuffer() {
	srv, c := startFake()
	defer srv.Close()
	defer c.Close()

	// The caller's own buffer, reused across writers.
	buf := make([]byte, 64<<10)
	for i := range 3 {
		w, err := c.NewWriter(context.Background(), "demo", fmt.Sprintf("log/%d", i), uploader.WithBuffer(buf))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Fprintf(w, "line %d\n", i)
		if err := w.Close(); err != nil { // buf is free again once Close returns
			log.Fatal(err)
		}
		fmt.Println(w.Attrs().Name, w.Attrs().Size)
	}
	// Output:
	// log/0 7
	// log/1 7
	// log/2 7
}

func ExampleClient_UploadMany() {
	srv, c := startFake()
	defer srv.Close()
	defer c.Close()

	items := []uploader.Item{
		{Name: "a.json", Data: []byte(`{"a":1}`), Tenant: "acme"},
		{Name: "b.json", Data: []byte(`{"b":2}`), Tenant: "globex"},
	}
	results, err := c.UploadMany(context.Background(), "demo", items, uploader.WithConcurrency(2))
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range results {
		fmt.Println(r.Name, r.Attrs.Size)
	}
	for _, call := range srv.Calls() {
		fmt.Println(call.Method, call.Object, call.Tenant)
	}
	// Unordered output:
	// a.json 7
	// b.json 7
	// WriteObject a.json acme
	// WriteObject b.json globex
}

func ExampleIsPreconditionFailed() {
	srv, c := startFake()
	defer srv.Close()
	defer c.Close()

	ctx, err := header.WithTenant(context.Background(), "acme")
	if err != nil {
		log.Fatal(err)
	}
	for range 2 {
		_, err := c.Upload(ctx, "demo", "once", bytes.NewReader([]byte("x")), uploader.WithDoesNotExist())
		fmt.Println(err == nil, uploader.IsPreconditionFailed(err))
	}
	// Output:
	// true false
	// false true
}
