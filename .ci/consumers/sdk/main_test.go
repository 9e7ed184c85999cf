package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/objup/objup/uploader"
)

// TestUploadWithNoServer: an upload to an address where nothing listens
// fails within its context's deadline, with an error of the SDK's codes.
func TestUploadWithNoServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := uploader.NewClient(ctx,
		option.WithEndpoint("127.0.0.1:1"),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Upload(ctx, "bkt", "obj", strings.NewReader("hello"))
	if err == nil {
		t.Fatal("upload with no server succeeded")
	}
	t.Logf("%v (code %v)", err, uploader.CodeOf(err))
}
