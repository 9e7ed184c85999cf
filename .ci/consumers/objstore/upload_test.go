package objstore

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/go-kit/log"
	"github.com/thanos-io/objstore/providers/gcs"

	"github.com/objup/objup/adapters/objupstore"
	"github.com/objup/objup/fakes"
)

func TestUploadThroughObjstore(t *testing.T) {
	srv, err := fakes.New(fakes.WithBucket("blocks"))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	t.Setenv("STORAGE_EMULATOR_HOST_GRPC", srv.GRPCAddr())
	cfg := gcs.DefaultConfig
	cfg.Bucket = "blocks"
	cfg.UseGRPC = true
	ctx := context.Background()
	bkt, err := objupstore.NewBucketWithConfig(ctx, log.NewNopLogger(), cfg, "consumer")
	if err != nil {
		t.Fatal(err)
	}
	defer bkt.Close()
	if err := bkt.Upload(ctx, "01JBLOCK/meta.json", strings.NewReader(`{"version":1}`)); err != nil {
		t.Fatal(err)
	}
	r, err := bkt.Get(ctx, "01JBLOCK/meta.json")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil || string(b) != `{"version":1}` {
		t.Fatalf("read %q, %v", b, err)
	}
}
