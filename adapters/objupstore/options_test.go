package objupstore_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"

	"github.com/go-kit/log"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/objup/objup/adapters/objupstore"
	"github.com/objup/objup/fakes"
	"github.com/objup/objup/uploader"
)

// countingRT counts the requests it carries.
type countingRT struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c countingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(r)
}

// TestOptions: each option alone, and what it changes.
func TestOptions(t *testing.T) {
	tests := []struct {
		name string
		// setup returns the options and a check of their effect after an
		// upload and a read of object "o" on s.
		setup func(t *testing.T, s server) ([]objupstore.Option, func(t *testing.T, b *objupstore.Bucket))
	}{
		{"WithClient", func(t *testing.T, s server) ([]objupstore.Option, func(*testing.T, *objupstore.Bucket)) {
			c, err := uploader.NewClient(context.Background(), option.WithEndpoint(s.grpc), option.WithoutAuthentication(),
				option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return []objupstore.Option{objupstore.WithClient(c)}, func(t *testing.T, b *objupstore.Bucket) {
				if err := b.Close(); err != nil {
					t.Fatal(err)
				}
				// The bucket leaves the client it was given open.
				if _, err := c.Upload(context.Background(), testBucket, "after-close", strings.NewReader("x")); err != nil {
					t.Fatalf("client closed with the bucket: %v", err)
				}
			}
		}},
		{"WithClientOptions", func(t *testing.T, s server) ([]objupstore.Option, func(*testing.T, *objupstore.Bucket)) {
			other, err := fakes.New(fakes.WithBucket(testBucket))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { other.Close() })
			// Options given win over the config's: uploads go to the other fake.
			return []objupstore.Option{objupstore.WithClientOptions(option.WithEndpoint(other.GRPCAddr()))}, func(t *testing.T, b *objupstore.Bucket) {
				if _, err := other.Object(testBucket, "o"); err != nil {
					t.Fatalf("upload did not go to the endpoint given: %v", err)
				}
			}
		}},
		{"WithReadsRoundTripper", func(t *testing.T, s server) ([]objupstore.Option, func(*testing.T, *objupstore.Bucket)) {
			var n atomic.Int64
			wrap := func(rt http.RoundTripper) http.RoundTripper { return countingRT{rt, &n} }
			return []objupstore.Option{objupstore.WithReadsRoundTripper(wrap)}, func(t *testing.T, b *objupstore.Bucket) {
				if n.Load() == 0 {
					t.Fatal("the reads did not go through the wrapped transport")
				}
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startFake(t)
			transport := "grpc"
			if tc.name == "WithReadsRoundTripper" {
				transport = "json" // the stock provider wraps its HTTP transport only
			}
			opts, check := tc.setup(t, s)
			b, err := objupstore.NewBucketWithConfig(context.Background(), log.NewNopLogger(), emulatorConfig(t, s, transport), "test", opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if err := b.Upload(context.Background(), "o", strings.NewReader("data")); err != nil {
				t.Fatal(err)
			}
			if tc.name != "WithClientOptions" {
				r, err := b.Get(context.Background(), "o")
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(r)
				r.Close()
				if err != nil || string(got) != "data" {
					t.Fatalf("read %q, %v", got, err)
				}
			}
			check(t, b)
		})
	}
}

// TestUploadReaderFails: when the caller's reader fails, Upload returns its
// error and stores nothing, whether the object would fit one chunk or not.
func TestUploadReaderFails(t *testing.T) {
	for _, transport := range []string{"grpc", "json"} {
		for _, size := range []int{10, 600 << 10} {
			t.Run(fmt.Sprintf("%s/%dB", transport, size), func(t *testing.T) {
				s := startFake(t)
				b := newBucket(t, s, transport)
				r := io.MultiReader(strings.NewReader(strings.Repeat("x", size)), iotest.ErrReader(io.ErrClosedPipe))
				err := b.Upload(context.Background(), "broken", r)
				if err == nil || !strings.Contains(err.Error(), io.ErrClosedPipe.Error()) {
					t.Fatalf("Upload = %v, want the reader's error", err)
				}
				if ok, err := b.Exists(context.Background(), "broken"); ok || err != nil {
					t.Fatalf("Exists = %v, %v: a failed upload stored the object", ok, err)
				}
			})
		}
	}
}

// TestNewBucketFromYAML: objstore's YAML, as gcs.NewBucket takes it, and
// what it refuses.
func TestNewBucketFromYAML(t *testing.T) {
	s := startFake(t)
	t.Setenv("STORAGE_EMULATOR_HOST_GRPC", s.grpc)
	tests := []struct {
		name, yaml, wantErr string
	}{
		{"grpc", "bucket: " + testBucket + "\nuse_grpc: true\nchunk_size_bytes: 1048576\nmax_retries: 3\n", ""},
		{"unknown field", "bucket: " + testBucket + "\nno_such_field: 1\n", "no_such_field"},
		{"no bucket", "use_grpc: true\n", "bucket"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := objupstore.NewBucket(context.Background(), log.NewNopLogger(), []byte(tc.yaml), "test")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if err := b.Upload(context.Background(), "yaml", strings.NewReader("y")); err != nil {
				t.Fatal(err)
			}
			if ok, err := b.Exists(context.Background(), "yaml"); !ok || err != nil {
				t.Fatalf("Exists = %v, %v", ok, err)
			}
		})
	}
}
