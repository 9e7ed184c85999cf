package uploader_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"cloud.google.com/go/storage"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/uploader"
)

// TestReadBackWithOfficialClient uploads with objup and reads every object back
// byte for byte with the official client, over gRPC and over the JSON API.
func TestReadBackWithOfficialClient(t *testing.T) {
	srv, err := fakes.New(fakes.WithBucket(bucket))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	c, err := uploader.NewClient(ctx, dialOptions(srv)...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	grpcClient, err := storage.NewGRPCClient(ctx,
		option.WithEndpoint(srv.GRPCAddr()),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
		storage.WithDisabledClientMetrics())
	if err != nil {
		t.Fatal(err)
	}
	defer grpcClient.Close()
	jsonClient, err := storage.NewClient(ctx, option.WithEndpoint(srv.HTTPURL()+"/storage/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	defer jsonClient.Close()

	for _, size := range sizes {
		t.Run(sizeName(size), func(t *testing.T) {
			name := "official/" + sizeName(size)
			data := payload(size, 21)
			w, err := c.NewWriter(ctx, bucket, name, uploader.WithAttrs(uploader.ObjectAttrs{ContentType: "application/octet-stream"}))
			if err != nil {
				t.Fatal(err)
			}
			writeSplit(t, w, data, 5)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			for _, peer := range []struct {
				name string
				c    *storage.Client
			}{{"grpc", grpcClient}, {"json", jsonClient}} {
				r, err := peer.c.Bucket(bucket).Object(name).NewReader(ctx)
				if err != nil {
					t.Fatalf("%s NewReader: %v", peer.name, err)
				}
				got, err := io.ReadAll(r)
				r.Close()
				if err != nil {
					t.Fatalf("%s read: %v", peer.name, err)
				}
				sameBytes(t, peer.name+" read", got, data)
				a, err := peer.c.Bucket(bucket).Object(name).Attrs(ctx)
				if err != nil {
					t.Fatalf("%s attrs: %v", peer.name, err)
				}
				if a.Size != int64(size) || a.CRC32C != w.Attrs().CRC32C || a.ContentType != "application/octet-stream" {
					t.Fatalf("%s attrs = size %d crc %08x type %q; writer said size %d crc %08x", peer.name, a.Size, a.CRC32C, a.ContentType, w.Attrs().Size, w.Attrs().CRC32C)
				}
				if !bytes.Equal(a.MD5, nil) && len(a.MD5) != 16 {
					t.Fatalf("%s MD5 = %x", peer.name, a.MD5)
				}
			}
		})
	}
}
