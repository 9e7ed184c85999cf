package blob

import (
	"context"
	"testing"

	"gocloud.dev/blob"

	_ "github.com/objup/objup/adapters/objupblob" // registers objup://
	"github.com/objup/objup/fakes"
)

func TestUploadThroughGoCDK(t *testing.T) {
	srv, err := fakes.New(fakes.WithBucket("photos"))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	t.Setenv("STORAGE_EMULATOR_HOST_GRPC", srv.GRPCAddr())
	ctx := context.Background()
	b, err := blob.OpenBucket(ctx, "objup://photos?transport=grpc")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.WriteAll(ctx, "2026/11/a.txt", []byte("hello"), nil); err != nil {
		t.Fatal(err)
	}
	o, err := srv.Object("photos", "2026/11/a.txt")
	if err != nil || string(o.Content) != "hello" {
		t.Fatalf("stored %q, %v", o.Content, err)
	}
}
