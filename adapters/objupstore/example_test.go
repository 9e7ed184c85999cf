package objupstore_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/go-kit/log"
	"github.com/thanos-io/objstore"
	"github.com/thanos-io/objstore/providers/gcs"

	"github.com/objup/objup/adapters/objupstore"
	"github.com/objup/objup/fakes"
	"github.com/objup/objup/header"
)

// A Thanos-style bucket on the project's fake over gRPC: the emulator
// variable points both the uploads and the reads at it.
func ExampleNewBucketWithConfig() {
	srv, err := fakes.New(fakes.WithBucket("blocks"))
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	os.Setenv("STORAGE_EMULATOR_HOST_GRPC", srv.GRPCAddr())
	defer os.Unsetenv("STORAGE_EMULATOR_HOST_GRPC")

	cfg := gcs.DefaultConfig
	cfg.Bucket = "blocks"
	cfg.UseGRPC = true
	ctx := context.Background()
	bkt, err := objupstore.NewBucketWithConfig(ctx, log.NewNopLogger(), cfg, "example")
	if err != nil {
		panic(err)
	}
	defer bkt.Close()

	// The tenant rides on the upload as x-scope-orgid.
	up, err := header.WithTenant(ctx, "team-a")
	if err != nil {
		panic(err)
	}
	if err := bkt.Upload(up, "01JBLOCK/meta.json", strings.NewReader(`{"version":1}`), objstore.WithContentType("application/json")); err != nil {
		panic(err)
	}
	r, err := bkt.Get(ctx, "01JBLOCK/meta.json")
	if err != nil {
		panic(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(b))
	_, err = bkt.Get(ctx, "01JBLOCK/missing")
	fmt.Println(bkt.IsObjNotFoundErr(err))
	// Output:
	// {"version":1}
	// true
}
