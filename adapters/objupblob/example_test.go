package objupblob_test

import (
	"context"
	"fmt"
	"net/url"
	"os"

	"gocloud.dev/blob"

	_ "github.com/objup/objup/adapters/objupblob" // registers objup://
	"github.com/objup/objup/fakes"
)

// Opening a bucket by URL against the project's fake: the emulator
// variables point objup's uploads (gRPC by default, transport=json for the
// JSON API) and gcsblob's reads at it.
func Example() {
	srv, err := fakes.New(fakes.WithBucket("photos"))
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	u, err := url.Parse(srv.HTTPURL())
	if err != nil {
		panic(err)
	}
	os.Setenv("STORAGE_EMULATOR_HOST", u.Host)
	os.Setenv("STORAGE_EMULATOR_HOST_GRPC", srv.GRPCAddr())
	defer os.Unsetenv("STORAGE_EMULATOR_HOST")
	defer os.Unsetenv("STORAGE_EMULATOR_HOST_GRPC")

	ctx := context.Background()
	for _, transport := range []string{"grpc", "json"} {
		b, err := blob.OpenBucket(ctx, "objup://photos?transport="+transport)
		if err != nil {
			panic(err)
		}
		key := "2026/11/" + transport + ".txt"
		if err := b.WriteAll(ctx, key, []byte("hello over "+transport), &blob.WriterOptions{ContentType: "text/plain"}); err != nil {
			panic(err)
		}
		data, err := b.ReadAll(ctx, key)
		if err != nil {
			panic(err)
		}
		a, err := b.Attributes(ctx, key)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s (%s)\n", data, a.ContentType)
		if err := b.Close(); err != nil {
			panic(err)
		}
	}
	// Output:
	// hello over grpc (text/plain)
	// hello over json (text/plain)
}
