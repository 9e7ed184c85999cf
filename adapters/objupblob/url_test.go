package objupblob_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"gocloud.dev/blob"
	"gocloud.dev/blob/gcsblob"
	"gocloud.dev/gcp"

	"github.com/objup/objup/adapters/objupblob"
	"github.com/objup/objup/fakes"
)

// TestURLOpener: the URLs it opens and the ones it refuses.
func TestURLOpener(t *testing.T) {
	srv, err := fakes.New(fakes.WithBucket("urls"))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	u, err := url.Parse(srv.HTTPURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("STORAGE_EMULATOR_HOST", u.Host)
	t.Setenv("STORAGE_EMULATOR_HOST_GRPC", srv.GRPCAddr())
	opener := &objupblob.URLOpener{GCS: gcsblob.URLOpener{Client: gcp.NewAnonymousHTTPClient(gcp.DefaultTransport())}}
	tests := []struct {
		url     string
		wantErr string
	}{
		{"objup://urls", ""},
		{"objup://urls?transport=grpc", ""},
		{"objup://urls?transport=json", ""},
		{"objup://urls?transport=xml", "transport must be grpc or json"},
		{"objup://urls?nonsense=1", "nonsense"},
	}
	ctx := context.Background()
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			pu, err := url.Parse(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			b, err := opener.OpenBucketURL(ctx, pu)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := b.Close(); err != nil {
					t.Error(err)
				}
			}()
			key := "k" + pu.RawQuery
			if err := b.WriteAll(ctx, key, []byte(tc.url), nil); err != nil {
				t.Fatal(err)
			}
			if got, err := b.ReadAll(ctx, key); err != nil || string(got) != tc.url {
				t.Fatalf("read back %q, %v", got, err)
			}
		})
	}
	if objupblob.Scheme != "objup" {
		t.Errorf("Scheme = %q", objupblob.Scheme)
	}
	var _ blob.BucketURLOpener = opener
}
