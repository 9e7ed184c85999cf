package fakes_test

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"net/http"
	"strings"
	"testing"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/internal/httpcode"
)

// TestCompose: the official client's Composer, over the JSON API and over
// gRPC. The composed object holds the sources' bytes in order, its CRC32C
// is theirs combined, it has no MD5, and its component count adds up the
// sources' (a composed source counts its components); the destination's
// preconditions and the sources' generation preconditions hold as on GCS.
func TestCompose(t *testing.T) {
	srv, _ := start(t)
	ctx := ctxT(t)
	jsonClient, err := storage.NewClient(ctx, option.WithEndpoint(srv.HTTPURL()+"/storage/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	defer jsonClient.Close()
	grpcClient, err := storage.NewGRPCClient(ctx, option.WithEndpoint(srv.GRPCAddr()), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())), storage.WithDisabledClientMetrics())
	if err != nil {
		t.Fatal(err)
	}
	defer grpcClient.Close()
	parts := [][]byte{payload(300<<10, 1), payload(7, 2), payload(3<<20+5, 3)}
	for i, p := range parts {
		httpPut(t, srv, fmt.Sprintf("part/%d", i), p)
	}
	all := bytes.Join(parts, nil)
	for _, api := range []struct {
		name string
		c    *storage.Client
	}{{"json", jsonClient}, {"grpc", grpcClient}} {
		t.Run(api.name, func(t *testing.T) {
			bkt := api.c.Bucket(bucket)
			var srcs []*storage.ObjectHandle
			for i := range parts {
				srcs = append(srcs, bkt.Object(fmt.Sprintf("part/%d", i)))
			}
			dst := api.name + "/composed"
			comp := bkt.Object(dst).ComposerFrom(srcs...)
			comp.ContentType = "application/x-composed"
			attrs, err := comp.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if attrs.Size != int64(len(all)) || attrs.CRC32C != crc32.Checksum(all, castagnoli) || len(attrs.MD5) != 0 ||
				attrs.ComponentCount != 3 || attrs.ContentType != "application/x-composed" {
				t.Fatalf("composed: size %d, crc %08x, md5 %x, components %d, type %q", attrs.Size, attrs.CRC32C, attrs.MD5, attrs.ComponentCount, attrs.ContentType)
			}
			got, st := httpGet(t, srv, dst)
			if st != http.StatusOK || !bytes.Equal(got, all) {
				t.Fatalf("read back %d bytes (%d), want the %d bytes of the parts in order", len(got), st, len(all))
			}
			// A composed source counts its components.
			again, err := bkt.Object(dst+"-again").ComposerFrom(bkt.Object(dst), srcs[1]).Run(ctx)
			if err != nil || again.ComponentCount != 4 || again.Size != int64(len(all)+len(parts[1])) {
				t.Fatalf("compose of a composite: %v, %+v", err, again)
			}
			for _, tc := range []struct {
				name string
				run  func() error
				want codes.Code
			}{
				{"destination exists, DoesNotExist", func() error {
					_, err := bkt.Object(dst).If(storage.Conditions{DoesNotExist: true}).ComposerFrom(srcs...).Run(ctx)
					return err
				}, codes.FailedPrecondition},
				{"source generation does not match", func() error {
					_, err := bkt.Object("x").ComposerFrom(srcs[0].If(storage.Conditions{GenerationMatch: 1})).Run(ctx)
					return err
				}, codes.FailedPrecondition},
				{"missing source", func() error {
					_, err := bkt.Object("x").ComposerFrom(bkt.Object("no-such-part")).Run(ctx)
					return err
				}, codes.NotFound},
				{"33 sources", func() error {
					many := make([]*storage.ObjectHandle, 33)
					for i := range many {
						many[i] = srcs[1]
					}
					_, err := bkt.Object("x").ComposerFrom(many...).Run(ctx)
					return err
				}, codes.InvalidArgument},
			} {
				t.Run(tc.name, func(t *testing.T) {
					if got := codeOf(tc.run()); got != tc.want {
						t.Fatalf("code %v, want %v", got, tc.want)
					}
				})
			}
			if _, st := httpGet(t, srv, "x"); st != http.StatusNotFound {
				t.Fatalf("a failed compose stored its destination (%d)", st)
			}
		})
	}
}

// codeOf is the gRPC code of an error of the official client, over either
// API.
func codeOf(err error) codes.Code {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return httpcode.Code(ge.Code)
	}
	return status.Code(err)
}

// TestComposeNoSources: a compose without sources is refused with 400.
func TestComposeNoSources(t *testing.T) {
	srv, _ := start(t)
	resp, err := http.Post(srv.HTTPURL()+"/storage/v1/b/"+bucket+"/o/empty/compose", "application/json",
		strings.NewReader(`{"sourceObjects": [], "destination": {}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("compose of nothing: %s, want 400", resp.Status)
	}
	if o, err := srv.Object(bucket, "empty"); err == nil {
		t.Fatalf("stored %+v", o.ObjectAttrs)
	}

}
