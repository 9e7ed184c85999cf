package frontend_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/fakes/frontend"
	"github.com/objup/objup/internal/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const bucket = "frontend-test"

// TestThroughFrontend: a gRPC call and JSON API calls reach the fake GCS
// through HAProxy, and what one wrote over one API reads back over the
// other.
func TestThroughFrontend(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket(bucket))
	grpcAddr := frontend.StartTest(t, srv.GRPCAddr(), frontend.GRPC)
	httpAddr := frontend.StartTest(t, strings.TrimPrefix(srv.HTTPURL(), "http://"), frontend.HTTP1)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	cc, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()

	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"grpc WriteObject, json get", func(t *testing.T) {
			st, err := wire.NewWriteObjectStream(ctx, cc)
			if err != nil {
				t.Fatal(err)
			}
			st.Send(&wire.WriteObjectRequest{
				FirstMessage: &wire.WriteObjectRequest_WriteObjectSpec{WriteObjectSpec: &wire.WriteObjectSpec{
					Resource: &wire.Object{Bucket: "projects/_/buckets/" + bucket, Name: "via-grpc"}}},
				Data:        &wire.WriteObjectRequest_ChecksummedData{ChecksummedData: &wire.ChecksummedData{Content: []byte("hello")}},
				FinishWrite: true,
			})
			resp, err := st.CloseAndRecv()
			if err != nil || resp.GetResource().GetSize() != 5 {
				t.Fatalf("WriteObject through HAProxy: %v, %v", resp, err)
			}
			if got := httpDo(t, hc, "GET", "http://"+httpAddr+"/storage/v1/b/"+bucket+"/o/via-grpc?alt=media", nil, http.StatusOK); got != "hello" {
				t.Fatalf("read back %q", got)
			}
		}},
		{"json upload, grpc get", func(t *testing.T) {
			httpDo(t, hc, "POST", "http://"+httpAddr+"/upload/storage/v1/b/"+bucket+"/o?uploadType=media&name=via-json", []byte("world!"), http.StatusOK)
			var o wire.Object
			if err := cc.Invoke(ctx, wire.MethodGetObject, &wire.GetObjectRequest{Bucket: "projects/_/buckets/" + bucket, Object: "via-json"}, &o); err != nil || o.GetSize() != 6 {
				t.Fatalf("GetObject through HAProxy: %v, %v", &o, err)
			}
		}},
		{"grpc error status passes", func(t *testing.T) {
			var o wire.Object
			err := cc.Invoke(ctx, wire.MethodGetObject, &wire.GetObjectRequest{Bucket: "projects/_/buckets/" + bucket, Object: "missing"}, &o)
			if status.Code(err) != codes.NotFound {
				t.Fatalf("GetObject of a missing object through HAProxy: %v, want NotFound", err)
			}
		}},
		{"json error passes", func(t *testing.T) {
			httpDo(t, hc, "GET", "http://"+httpAddr+"/storage/v1/b/"+bucket+"/o/missing", nil, http.StatusNotFound)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

// httpDo sends one request and checks its status; it returns the body.
func httpDo(t *testing.T, hc *http.Client, method, url string, body []byte, want int) string {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %s %s, want %d", method, url, resp.Status, b, want)
	}
	return string(b)
}

// TestMissingBinary: without a haproxy binary Start fails with an error
// IsMissing recognizes, which StartTest turns into a skip.
func TestMissingBinary(t *testing.T) {
	_, err := frontend.Start("127.0.0.1:1", frontend.GRPC, frontend.WithBinary("/nonexistent/haproxy"))
	if !frontend.IsMissing(err) {
		t.Fatalf("Start with no binary: %v, want an error IsMissing recognizes", err)
	}
	rec := &recorder{}
	func() {
		defer func() { recover() }() // recorder.Skip stops the function as t.Skip would
		frontend.StartTest(rec, "127.0.0.1:1", frontend.GRPC, frontend.WithBinary("/nonexistent/haproxy"))
	}()
	if !strings.Contains(rec.skipped, "haproxy is not installed") || rec.failed {
		t.Fatalf("StartTest skipped with %q, failed %v", rec.skipped, rec.failed)
	}
}

// TestCloseStops: Close stops HAProxy, and its port stops answering.
func TestCloseStops(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket(bucket))
	f, err := frontend.Start(strings.TrimPrefix(srv.HTTPURL(), "http://"), frontend.HTTP1)
	if frontend.IsMissing(err) {
		t.Skip("skipping: " + err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	httpDo(t, hc, "GET", "http://"+f.Addr()+"/storage/v1/b/"+bucket, nil, http.StatusOK)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := hc.Get("http://" + f.Addr() + "/storage/v1/b/" + bucket); err == nil {
		t.Fatal("the front end still answers after Close")
	}
}

// recorder is a frontend.TB that records a skip.
type recorder struct {
	skipped string
	failed  bool
}

func (r *recorder) Helper()           {}
func (r *recorder) Cleanup(func())    {}
func (r *recorder) Fatal(args ...any) { r.failed = true; panic("Fatal") }
func (r *recorder) Skip(args ...any) {
	for _, a := range args {
		r.skipped += a.(string)
	}
	panic("Skip")
}
