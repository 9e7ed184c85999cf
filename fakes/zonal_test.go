package fakes_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/internal/wire"
)

// TestZonalBucket checks a bucket made with WithZonalBucket: it reports
// location type "zone" and storage class RAPID, takes appendable writes
// (whose objects are RAPID), and refuses every other write into it, over
// gRPC with InvalidArgument and over JSON with 400, storing nothing.
func TestZonalBucket(t *testing.T) {
	const plain = "plain-bucket"
	srv := fakes.NewTest(t, fakes.WithZonalBucket(bucket), fakes.WithBucket(plain))
	cc := dial(t, srv)
	ctx := ctxT(t)
	body := payload(3<<10, 90)
	out, err := bidi(ctx, cc, creating("app", data(0, body)), finish(int64(len(body)), body))
	if err != nil || len(out) != 2 || out[1].GetResource().GetStorageClass() != "RAPID" || out[1].GetResource().GetFinalizeTime() == nil {
		t.Fatalf("appendable write: %v, %v; want a finalized RAPID object", out, err)
	}
	sameBytes(t, "appendable object", get(t, cc, "app"), body)
	src := spec("src")
	src.Resource.Bucket = "projects/_/buckets/" + plain
	if _, err := writeObject(ctx, cc, chunks(body, len(body), withSpec(src))...); err != nil {
		t.Fatal(err)
	}

	r := do(t, srv, "GET", "/storage/v1/b/"+bucket, nil)
	var b struct{ Location, LocationType, StorageClass string }
	r.decode(t, &b)
	if b.LocationType != "zone" || b.StorageClass != "RAPID" || b.Location == "US" {
		t.Fatalf("JSON bucket: %+v; want a zone and RAPID", b)
	}

	// The official client over gRPC: the bucket's attributes, an
	// appendable write and one that is not.
	c := officialBidi(t, srv)
	attrs, err := c.Bucket(bucket).Attrs(ctx)
	if err != nil || attrs.LocationType != "zone" || attrs.StorageClass != "RAPID" {
		t.Fatalf("gRPC bucket attrs: %+v, %v; want a zone and RAPID", attrs, err)
	}
	for _, appendable := range []bool{true, false} {
		w := c.Bucket(bucket).Object("official").NewWriter(ctx)
		w.Append, w.FinalizeOnClose = appendable, true
		_, err := w.Write(body)
		if err == nil {
			err = w.Close()
		}
		if want := map[bool]codes.Code{true: codes.OK, false: codes.InvalidArgument}[appendable]; status.Code(err) != want {
			t.Fatalf("official writer, appendable %v: %v, want %v", appendable, err, want)
		}
	}
	sameBytes(t, "official appendable write", get(t, cc, "official"), body)

	for _, tc := range []struct {
		name string
		grpc func(ctx context.Context, cc *grpc.ClientConn) error
	}{
		{"WriteObject", func(ctx context.Context, cc *grpc.ClientConn) error {
			_, err := writeObject(ctx, cc, chunks(body, len(body), withSpec(spec("w")))...)
			return err
		}},
		{"BidiWriteObject not appendable", func(ctx context.Context, cc *grpc.ClientConn) error {
			_, err := bidi(ctx, cc, bidiChunks(body, len(body), bidiSpec(spec("w")))...)
			return err
		}},
		{"StartResumableWrite", func(ctx context.Context, cc *grpc.ClientConn) error {
			return cc.Invoke(ctx, wire.MethodStartResumableWrite, &wire.StartResumableWriteRequest{WriteObjectSpec: spec("w")}, &wire.StartResumableWriteResponse{})
		}},
		{"ComposeObject", func(ctx context.Context, cc *grpc.ClientConn) error {
			req := &wire.ComposeObjectRequest{Destination: &wire.Object{Bucket: bucketRes, Name: "w"},
				SourceObjects: []*wire.ComposeObjectRequest_SourceObject{{Name: "app"}}}
			return cc.Invoke(ctx, wire.MethodComposeObject, req, &wire.Object{})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.grpc(ctx, cc)
			wantCode(t, err, codes.InvalidArgument)
			absent(t, cc, "w")
		})
	}

	srcPath := "/storage/v1/b/" + plain + "/o/src"
	for _, tc := range []struct {
		name string
		send func() *reply
	}{
		{"media upload", func() *reply { return do(t, srv, "POST", uploadPath("media", "w"), body) }},
		{"multipart upload", func() *reply {
			mp, ct := multipartBody(t, `{"name":"w"}`, "text/plain", body)
			return do(t, srv, "POST", uploadPath("multipart", ""), mp, "Content-Type", ct)
		}},
		{"resumable upload", func() *reply { return do(t, srv, "POST", uploadPath("resumable", "w"), nil) }},
		{"compose", func() *reply {
			return jsonPost(t, srv, objPath("w")+"/compose", `{"sourceObjects":[{"name":"app"}]}`)
		}},
		{"copy", func() *reply { return jsonPost(t, srv, srcPath+"/copyTo/b/"+bucket+"/o/"+url.PathEscape("w"), `{}`) }},
		{"rewrite", func() *reply { return jsonPost(t, srv, srcPath+"/rewriteTo/b/"+bucket+"/o/"+url.PathEscape("w"), `{}`) }},
	} {
		t.Run("JSON "+tc.name, func(t *testing.T) {
			r := tc.send()
			if reason, _ := r.errorReason(t, http.StatusBadRequest); reason != "invalid" {
				t.Fatalf("reason %q, want invalid", reason)
			}
			absent(t, cc, "w")
		})
	}

	// Objects may be copied out of a zonal bucket.
	if r := jsonPost(t, srv, objPath("app")+"/copyTo/b/"+plain+"/o/copied", `{}`); r.status != http.StatusOK {
		t.Fatalf("copy out of the zonal bucket: %d %s", r.status, r.body)
	}
	if _, err := srv.Object(plain, "copied"); err != nil {
		t.Fatal(err)
	}
}

// TestZonalBucketOption checks the validation of WithZonalBucket.
func TestZonalBucketOption(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []fakes.Option
		ok   bool
	}{
		{"one", []fakes.Option{fakes.WithZonalBucket("zone-a")}, true},
		{"twice", []fakes.Option{fakes.WithZonalBucket("zone-a"), fakes.WithZonalBucket("zone-a")}, true},
		{"with others", []fakes.Option{fakes.WithZonalBucket("zone-a"), fakes.WithBucket("plain")}, true},
		{"a bad name", []fakes.Option{fakes.WithZonalBucket("A")}, false},
		{"zonal and not", []fakes.Option{fakes.WithZonalBucket("zone-a"), fakes.WithBucket("zone-a")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := fakes.New(tc.opts...)
			if err == nil {
				srv.Close()
			}
			if (err == nil) != tc.ok {
				t.Fatalf("New: %v, want ok %v", err, tc.ok)
			}
		})
	}
}
