package objupstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/go-kit/log"
	"github.com/thanos-io/objstore"
	"github.com/thanos-io/objstore/providers/gcs"
	"google.golang.org/api/googleapi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/adapters/objupstore"
	"github.com/objup/objup/fakes"
	"github.com/objup/objup/header"
	"github.com/objup/objup/uploader"
)

const testBucket = "objstore-test"

// server is a GCS emulator on loopback the tests point both clients at.
type server struct {
	name string
	// grpc is the host:port of its storage v2 gRPC API, "" if it has none.
	grpc string
	// http is the base URL of its JSON and XML APIs.
	http string
	// tenants returns the tenant of each upload call ("" for none), when
	// the server records them.
	tenants func() []string
}

// startFake starts the project's fake in process, with testBucket.
func startFake(t testing.TB, opts ...fakes.Option) server {
	t.Helper()
	srv, err := fakes.New(append([]fakes.Option{fakes.WithBucket(testBucket)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return server{name: "fakegcs", grpc: srv.GRPCAddr(), http: srv.HTTPURL(), tenants: func() []string {
		var ts []string
		for _, c := range srv.Calls() {
			switch c.Method {
			case "WriteObject", "BidiWriteObject", "StartResumableWrite", "objects.insert":
				ts = append(ts, c.Tenant)
			}
		}
		return ts
	}}
}

// startFakeGCSServer starts fsouza/fake-gcs-server on 127.0.0.1, with
// testBucket: a JSON API written independently of the project's fake.
func startFakeGCSServer(t testing.TB) server {
	t.Helper()
	var h http.Handler
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) })) // on 127.0.0.1
	t.Cleanup(hs.Close)
	// The official client reads through the XML API at host/bucket/object,
	// which fake-gcs-server serves for its public host only.
	fs, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		NoListener: true, Scheme: "http", ExternalURL: hs.URL, PublicHost: hs.Listener.Addr().String(), Writer: io.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fs.Stop) // after the server, which waits for its handlers
	fs.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: testBucket})
	h = fs.HTTPHandler()
	return server{name: "fake-gcs-server", http: hs.URL}
}

// tokenServer answers OAuth 2.0 refresh requests with a token, on
// 127.0.0.1. The stock provider's JSON mode asks for credentials even when
// STORAGE_EMULATOR_HOST names an emulator (its switch to go without them is
// unexported), so the tests give it user credentials whose token endpoint
// is this server.
func tokenServer(t testing.TB) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": "emulator", "token_type": "Bearer", "expires_in": 3600})
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// emulatorConfig points the process's clients at s (the emulator
// variables) and returns objstore's GCS config of a bucket on it over
// transport "grpc" or "json".
func emulatorConfig(t testing.TB, s server, transport string) gcs.Config {
	t.Helper()
	cfg := gcs.DefaultConfig
	cfg.Bucket = testBucket
	switch transport {
	case "grpc":
		t.Setenv("STORAGE_EMULATOR_HOST_GRPC", s.grpc)
		cfg.UseGRPC = true
	case "json":
		u, err := url.Parse(s.http)
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv("STORAGE_EMULATOR_HOST", u.Host)
		cfg.ServiceAccount = fmt.Sprintf(`{"type":"authorized_user","client_id":"c","client_secret":"s","refresh_token":"r","token_uri":%q}`, tokenServer(t))
	default:
		t.Fatalf("transport %q", transport)
	}
	return cfg
}

// newBucket makes an objupstore bucket on s over transport, closed when
// the test ends.
func newBucket(t testing.TB, s server, transport string, opts ...objupstore.Option) *objupstore.Bucket {
	t.Helper()
	b, err := objupstore.NewBucketWithConfig(context.Background(), log.NewNopLogger(), emulatorConfig(t, s, transport), "test", opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	return b
}

// TestAcceptance runs objstore's own acceptance suite, plain and under a
// prefix, against the project's fake over gRPC and JSON, and against
// fake-gcs-server over JSON.
func TestAcceptance(t *testing.T) {
	tests := []struct {
		server    func(testing.TB) server
		transport string
	}{
		{func(t testing.TB) server { return startFake(t) }, "grpc"},
		{func(t testing.TB) server { return startFake(t) }, "json"},
		{startFakeGCSServer, "json"},
	}
	for _, tc := range tests {
		for _, prefix := range []string{"", "some/prefix"} {
			s := tc.server(t)
			t.Run(fmt.Sprintf("%s/%s/prefix=%q", s.name, tc.transport, prefix), func(t *testing.T) {
				var b objstore.Bucket = newBucket(t, s, tc.transport)
				if prefix != "" {
					b = objstore.NewPrefixedBucket(b, prefix)
				}
				objstore.AcceptanceTest(t, b)
			})
		}
	}
}

// TestUploadErrors: what an upload's failure answers to objstore's
// predicates, objup's, gRPC's status and errors.As with *googleapi.Error.
func TestUploadErrors(t *testing.T) {
	s := startFake(t)
	tests := []struct {
		name     string
		bucket   string
		object   string
		code     codes.Code
		httpCode int
		notFound bool
	}{
		{"missing bucket", "no-such-bucket", "a", codes.NotFound, http.StatusNotFound, true},
		{"invalid name", testBucket, "bad\xffname", codes.InvalidArgument, http.StatusBadRequest, false},
	}
	for _, tc := range tests {
		for _, transport := range []string{"grpc", "json"} {
			t.Run(tc.name+"/"+transport, func(t *testing.T) {
				cfg := emulatorConfig(t, s, transport)
				cfg.Bucket = tc.bucket
				b, err := objupstore.NewBucketWithConfig(context.Background(), log.NewNopLogger(), cfg, "test")
				if err != nil {
					t.Fatal(err)
				}
				defer b.Close()
				err = b.Upload(context.Background(), tc.object, strings.NewReader("data"))
				if err == nil {
					t.Fatal("upload succeeded")
				}
				if got := b.IsObjNotFoundErr(err); got != tc.notFound {
					t.Errorf("IsObjNotFoundErr(%v) = %v, want %v", err, got, tc.notFound)
				}
				if b.IsAccessDeniedErr(err) {
					t.Errorf("IsAccessDeniedErr(%v) = true", err)
				}
				if got := uploader.CodeOf(err); got != tc.code {
					t.Errorf("CodeOf = %v, want %v", got, tc.code)
				}
				if got := status.Code(err); got != tc.code {
					t.Errorf("status.Code = %v, want %v", got, tc.code)
				}
				var gerr *googleapi.Error
				if !errors.As(err, &gerr) || gerr.Code != tc.httpCode {
					t.Errorf("errors.As *googleapi.Error: %v, want HTTP %d", gerr, tc.httpCode)
				}
			})
		}
	}
}

// TestUploadContentTypeAndTenant: the content type objstore asks for is
// stored whatever the chunk size, and the tenant of the header chain or of
// WithTenantFunc rides on the upload.
func TestUploadContentTypeAndTenant(t *testing.T) {
	type tenantKey struct{}
	fromKey := objupstore.WithTenantFunc(func(ctx context.Context) (string, bool) {
		id, ok := ctx.Value(tenantKey{}).(string)
		return id, ok
	})
	tests := []struct {
		name       string
		opts       []objupstore.Option
		ctx        func(t *testing.T) context.Context
		wantTenant string
	}{
		{"header chain", nil, func(t *testing.T) context.Context {
			ctx, err := header.WithTenant(context.Background(), "acme")
			if err != nil {
				t.Fatal(err)
			}
			return ctx
		}, "acme"},
		{"tenant func", []objupstore.Option{fromKey}, func(t *testing.T) context.Context {
			return context.WithValue(context.Background(), tenantKey{}, "globex")
		}, "globex"},
		{"none", []objupstore.Option{fromKey}, func(t *testing.T) context.Context { return context.Background() }, ""},
	}
	for _, tc := range tests {
		for _, transport := range []string{"grpc", "json"} {
			t.Run(tc.name+"/"+transport, func(t *testing.T) {
				s := startFake(t)
				b := newBucket(t, s, transport, tc.opts...)
				name := "ct/" + tc.name
				if err := b.Upload(tc.ctx(t), name, strings.NewReader("{}"), objstore.WithContentType("application/x-test")); err != nil {
					t.Fatal(err)
				}
				ok, err := b.Exists(context.Background(), name)
				if err != nil || !ok {
					t.Fatalf("Exists = %v, %v", ok, err)
				}
				if tenants := s.tenants(); len(tenants) != 1 || tenants[0] != tc.wantTenant {
					t.Errorf("upload tenants %q, want %q", tenants, tc.wantTenant)
				}
			})
		}
	}
}

// TestInvalidTenant: a tenant header.WithTenant refuses fails the upload
// before anything is sent.
func TestInvalidTenant(t *testing.T) {
	s := startFake(t)
	b := newBucket(t, s, "grpc", objupstore.WithTenantFunc(func(context.Context) (string, bool) { return "bad\ntenant", true }))
	if err := b.Upload(context.Background(), "x", strings.NewReader("x")); err == nil {
		t.Fatal("upload with an invalid tenant succeeded")
	}
	if ok, _ := b.Exists(context.Background(), "x"); ok {
		t.Fatal("object stored")
	}
}
