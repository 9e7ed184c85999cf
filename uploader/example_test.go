package uploader_test

// These examples compile with every test run but do not run: they dial
// Cloud Storage with Application Default Credentials, as a program does.
// Their runnable twins, against objup's fake and with their output
// checked, are the Example_ functions of integration/uploadertest, in the
// integration module: the fake is not a requirement of the SDK's module.

import (
	"context"
	"fmt"
	"log"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/header"
	"github.com/objup/objup/uploader"
)

func ExampleClient_Upload() {
	ctx := context.Background()
	c, err := uploader.NewClient(ctx) // Application Default Credentials
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	attrs, err := c.Upload(ctx, "my-bucket", "greeting.txt", strings.NewReader("hello, objects"),
		uploader.WithConditions(uploader.Conditions{DoesNotExist: true}))
	if uploader.CodeOf(err) == codes.FailedPrecondition {
		fmt.Println("greeting.txt exists already")
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(attrs.Name, attrs.Size, attrs.Generation)
}

func ExampleClient_NewWriter() {
	ctx := context.Background()
	c, err := uploader.NewClient(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// The caller's own buffer, reused across writers: objup never touches
	// it after Close returns.
	buf := make([]byte, 64<<10)
	for i := range 3 {
		w, err := c.NewWriter(ctx, "my-bucket", fmt.Sprintf("log/%d", i), uploader.WithBuffer(buf))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Fprintf(w, "line %d\n", i)
		if err := w.Close(); err != nil {
			log.Fatal(err)
		}
	}
}

func ExampleClient_UploadMany() {
	ctx := context.Background()
	c, err := uploader.NewClient(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	items := []uploader.Item{
		{Name: "a.json", Data: []byte(`{"a":1}`), Tenant: "acme"},
		{Name: "b.json", Data: []byte(`{"b":2}`), Tenant: "globex"},
	}
	results, err := c.UploadMany(ctx, "my-bucket", items, uploader.WithConcurrency(32))
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range results {
		if r.Err != nil {
			fmt.Println(r.Name, uploader.CodeOf(r.Err))
		}
	}
}

func ExampleWithRetry() {
	ctx := context.Background()
	c, err := uploader.NewClient(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// One slow attempt costs at most 5 s; a failure episode gives up after
	// 20 s with the last attempt's error.
	ctx, err = header.WithTenant(ctx, "acme")
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.Upload(ctx, "my-bucket", "retried.txt", strings.NewReader("hello"),
		uploader.WithRetry(uploader.Retry{AttemptTimeout: 5 * time.Second, Deadline: 20 * time.Second}))
	if uploader.IsOutcomeUnknown(err) {
		fmt.Println("the object may be stored: read it back before writing it again")
	}
}
