package fake

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/uploader"
)

func TestUploadToFake(t *testing.T) {
	srv, err := fakes.New(fakes.WithBucket("demo"))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	c, err := uploader.NewClient(ctx,
		option.WithEndpoint(srv.GRPCAddr()),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	attrs, err := c.Upload(ctx, "demo", "greeting.txt", strings.NewReader("hello, objects"))
	if err != nil {
		t.Fatal(err)
	}
	o, err := srv.Object("demo", "greeting.txt")
	if err != nil {
		t.Fatal(err)
	}
	if string(o.Content) != "hello, objects" || attrs.Size != 14 {
		t.Fatalf("stored %q, attrs.Size %d", o.Content, attrs.Size)
	}
}
