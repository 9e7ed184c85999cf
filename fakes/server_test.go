package fakes_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/internal/wire"
)

func TestOptions(t *testing.T) {
	freePort := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().String()
	}
	t.Run("defaults", func(t *testing.T) {
		srv := fakes.NewTest(t)
		if !strings.HasPrefix(srv.GRPCAddr(), "127.0.0.1:") || !strings.HasPrefix(srv.HTTPURL(), "http://127.0.0.1:") {
			t.Fatalf("GRPCAddr %q, HTTPURL %q", srv.GRPCAddr(), srv.HTTPURL())
		}
		// No bucket: writes fail with NotFound.
		_, err := writeObject(ctxT(t), dial(t, srv), chunks([]byte("x"), 10, withSpec(spec("x")))...)
		wantCode(t, err, codes.NotFound)
	})
	t.Run("WithBucket", func(t *testing.T) {
		srv := fakes.NewTest(t, fakes.WithBucket("one"), fakes.WithBucket("two"), fakes.WithBucket("one"))
		cc := dial(t, srv)
		for _, b := range []string{"one", "two"} {
			if err := cc.Invoke(ctxT(t), wire.MethodListObjects, &wire.ListObjectsRequest{Parent: "projects/_/buckets/" + b}, new(wire.ListObjectsResponse)); err != nil {
				t.Fatalf("bucket %s: %v", b, err)
			}
		}
		resp, err := http.Get(srv.HTTPURL() + "/storage/v1/b/two")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("bucket over HTTP: %s", resp.Status)
		}
	})
	t.Run("WithGRPCAddr", func(t *testing.T) {
		addr := freePort()
		srv := fakes.NewTest(t, fakes.WithGRPCAddr(addr))
		if srv.GRPCAddr() != addr {
			t.Fatalf("GRPCAddr %q, want %q", srv.GRPCAddr(), addr)
		}
		srv2 := fakes.NewTest(t, fakes.WithGRPCAddr(":0"))
		if !strings.HasPrefix(srv2.GRPCAddr(), "127.0.0.1:") {
			t.Fatalf("empty host: GRPCAddr %q", srv2.GRPCAddr())
		}
	})
	t.Run("WithHTTPAddr", func(t *testing.T) {
		addr := freePort()
		srv := fakes.NewTest(t, fakes.WithHTTPAddr(addr))
		if srv.HTTPURL() != "http://"+addr {
			t.Fatalf("HTTPURL %q, want http://%s", srv.HTTPURL(), addr)
		}
	})
	t.Run("invalid", func(t *testing.T) {
		_, err := fakes.New(fakes.WithBucket("Bad"), fakes.WithBucket("x"), fakes.WithGRPCAddr("no-port"), fakes.WithHTTPAddr(""), fakes.WithCallLog(-1), fakes.WithCommitDelay(-time.Second))
		if err == nil {
			t.Fatal("New accepted invalid options")
		}
		for _, want := range []string{`"Bad"`, `"x"`, `gRPC address "no-port"`, `HTTP address ""`, "call log size -1", "commit delay -1s"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %s", err, want)
			}
		}
	})
	t.Run("port in use", func(t *testing.T) {
		srv := fakes.NewTest(t)
		_, err := fakes.New(fakes.WithHTTPAddr(strings.TrimPrefix(srv.HTTPURL(), "http://")))
		if err == nil {
			t.Fatal("New listened on a port in use")
		}
	})
}

func TestClose(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	srv, err := fakes.New(fakes.WithBucket(bucket))
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	put(t, cc, "x", []byte("x"))
	srv.Delay(fakes.MethodGetObject, time.Hour) // Close must cancel it
	slow := make(chan error, 1)
	go func() {
		_, err := getObject(context.Background(), cc, &wire.GetObjectRequest{Bucket: bucketRes, Object: "x"})
		slow <- err
	}()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	resp, err := hc.Get(srv.HTTPURL() + "/storage/v1/b")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := <-slow; status.Code(err) == codes.OK {
		t.Fatal("a delayed call survived Close")
	}
	_, err = getObject(ctxT(t), cc, &wire.GetObjectRequest{Bucket: bucketRes, Object: "x"})
	wantCode(t, err, codes.Unavailable)
	if _, err := hc.Get(srv.HTTPURL() + "/storage/v1/b"); err == nil {
		t.Fatal("HTTP server still answers after Close")
	}
	cc.Close()
	tr.CloseIdleConnections()
}

func TestAccessors(t *testing.T) {
	srv, cc := start(t)
	custom := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

	// Seeded straight into the store: visible over gRPC and over HTTP.
	seeded, err := srv.PutObject(fakes.Object{
		ObjectAttrs: fakes.ObjectAttrs{Bucket: bucket, Name: "seeded", ContentType: "text/plain",
			Metadata: map[string]string{"k": "v"}, CustomTime: custom, Tenant: "seeder"},
		Content: []byte("seed"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if seeded.Generation == 0 || seeded.Metageneration != 1 || seeded.Size != 4 || seeded.CRC32C != crcOf([]byte("seed")) || seeded.StorageClass != "STANDARD" {
		t.Fatalf("PutObject = %+v", seeded)
	}
	obj := mustGet(t, cc, "seeded")
	if obj.GetContentType() != "text/plain" || obj.GetSize() != 4 || obj.GetChecksums().GetCrc32C() != crcOf([]byte("seed")) ||
		obj.GetGeneration() != seeded.Generation || !obj.GetCustomTime().AsTime().Equal(custom) {
		t.Fatalf("seeded object over gRPC: %v", obj)
	}
	if got, code := httpGet(t, srv, "seeded"); code != http.StatusOK || string(got) != "seed" {
		t.Fatalf("seeded object over HTTP: %d %q", code, got)
	}

	// Written over gRPC, with a tenant: Object returns it, with a copy of
	// its content.
	ctx := metadata.AppendToOutgoingContext(ctxT(t), "x-scope-orgid", "acme")
	data := payload(3*mib+5, 31)
	if _, err := writeObject(ctx, cc, chunks(data, mib, withSpec(spec("from-grpc")))...); err != nil {
		t.Fatal(err)
	}
	got, err := srv.Object(bucket, "from-grpc")
	if err != nil {
		t.Fatal(err)
	}
	sameBytes(t, "Object content", got.Content, data)
	sum := md5.Sum(data)
	if got.Size != int64(len(data)) || got.CRC32C != crcOf(data) || !bytes.Equal(got.MD5, sum[:]) || got.Tenant != "acme" || got.Bucket != bucket {
		t.Fatalf("Object attrs %+v", got.ObjectAttrs)
	}
	got.Content[0] ^= 0xff
	sameBytes(t, "content after the caller changed its copy", get(t, cc, "from-grpc"), data)

	for _, tc := range []struct{ bucket, name string }{{bucket, "missing"}, {"no-such-bucket", "x"}} {
		if _, err := srv.Object(tc.bucket, tc.name); status.Code(err) != codes.NotFound {
			t.Errorf("Object(%q, %q): %v, want NotFound", tc.bucket, tc.name, err)
		}
	}
	if _, err := srv.PutObject(fakes.Object{ObjectAttrs: fakes.ObjectAttrs{Bucket: bucket, Name: ".."}}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("PutObject with a bad name: %v", err)
	}

	list, err := srv.ListObjects(bucket, "")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range list {
		names = append(names, a.Name)
	}
	if fmt.Sprint(names) != "[from-grpc seeded]" {
		t.Fatalf("ListObjects = %v", names)
	}
	if list, _ := srv.ListObjects(bucket, "s"); len(list) != 1 || list[0].Name != "seeded" {
		t.Fatalf("ListObjects with a prefix = %+v", list)
	}
	if _, err := srv.ListObjects("no-such-bucket", ""); status.Code(err) != codes.NotFound {
		t.Fatalf("ListObjects of a missing bucket: %v", err)
	}

	// Usage counts what each tenant stored.
	want := []fakes.Usage{{Tenant: "acme", Objects: 1, Bytes: int64(len(data))}, {Tenant: "seeder", Objects: 1, Bytes: 4}}
	if u := srv.Usage(); fmt.Sprint(u) != fmt.Sprint(want) {
		t.Fatalf("Usage = %v, want %v", u, want)
	}
}

func TestCrossAPI(t *testing.T) {
	srv, cc := start(t)
	data := payload(3*mib+1, 21)

	// JSON API upload, gRPC read: same bytes, same checksums.
	httpPut(t, srv, "via-http", data)
	sameBytes(t, "gRPC read of an HTTP upload", get(t, cc, "via-http"), data)
	obj := mustGet(t, cc, "via-http")
	if obj.GetChecksums().GetCrc32C() != crcOf(data) || obj.GetSize() != int64(len(data)) || obj.GetGeneration() == 0 {
		t.Fatalf("over gRPC: %v", obj)
	}

	// gRPC upload, JSON API read and metadata.
	put(t, cc, "via-grpc", data)
	got, code := httpGet(t, srv, "via-grpc")
	if code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	sameBytes(t, "HTTP read of a gRPC upload", got, data)
	grpcObj := mustGet(t, cc, "via-grpc")
	resp, err := http.Get(srv.HTTPURL() + "/storage/v1/b/" + bucket + "/o/via-grpc")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var meta struct {
		Size, Generation, Crc32c, Md5Hash string
	}
	if err := json.NewDecoder(resp.Body).Decode(&meta); err != nil {
		t.Fatal(err)
	}
	crc := grpcObj.GetChecksums().GetCrc32C()
	wantCRC := base64.StdEncoding.EncodeToString([]byte{byte(crc >> 24), byte(crc >> 16), byte(crc >> 8), byte(crc)})
	if meta.Size != "3145729" || meta.Crc32c != wantCRC || meta.Md5Hash != base64.StdEncoding.EncodeToString(grpcObj.GetChecksums().GetMd5Hash()) {
		t.Fatalf("JSON metadata %+v, gRPC %v", meta, grpcObj)
	}
	if meta.Generation == "" || meta.Generation != strconv.FormatInt(grpcObj.GetGeneration(), 10) {
		t.Fatalf("generation over JSON %q, over gRPC %d", meta.Generation, grpcObj.GetGeneration())
	}

	// Deleted over gRPC: gone over HTTP.
	if err := cc.Invoke(ctxT(t), wire.MethodDeleteObject, &wire.DeleteObjectRequest{Bucket: bucketRes, Object: "via-http"}, new(wire.Object)); err != nil {
		t.Fatal(err)
	}
	if _, code := httpGet(t, srv, "via-http"); code != http.StatusNotFound {
		t.Fatalf("deleted object over HTTP: status %d", code)
	}
}

// TestEmulatorHost points the official client at the fake the way tools do,
// with STORAGE_EMULATOR_HOST (host:port, no scheme): it then uses the JSON
// API for writes, listings and metadata and path-style reads on the same
// host.
func TestEmulatorHost(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket(bucket))
	t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(srv.HTTPURL(), "http://"))
	c, err := storage.NewClient(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	o := c.Bucket(bucket).Object("dir/emulated")
	for _, size := range []int{0, 100, 17 * mib} {
		data := payload(size, 50)
		w := o.NewWriter(ctxT(t))
		w.ContentType = "text/x-emu"
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := o.NewReader(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		sameBytes(t, "read back", got, data)
		if r.Attrs.Size != int64(size) || r.Attrs.ContentType != "text/x-emu" || r.Attrs.Generation != w.Attrs().Generation {
			t.Fatalf("reader attrs %+v, writer attrs %+v", r.Attrs, w.Attrs())
		}
	}
	it := c.Bucket(bucket).Objects(ctxT(t), &storage.Query{Prefix: "dir/"})
	a, err := it.Next()
	if err != nil || a.Name != "dir/emulated" || a.Size != 17*mib {
		t.Fatalf("listed %+v, %v", a, err)
	}
	var methods []string
	for _, call := range srv.Calls() {
		methods = append(methods, call.Method)
	}
	if !slices.Contains(methods, "xml.objects.get") || !slices.Contains(methods, "objects.insert") || !slices.Contains(methods, "objects.list") {
		t.Fatalf("calls %v", methods)
	}
}

// TestHTTPConns: the JSON API port counts the connections it accepted, so
// a test can tell a client that reuses its connections from one that
// opens one per request.
func TestHTTPConns(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket("conns"))
	get := func(hc *http.Client) {
		t.Helper()
		resp, err := hc.Get(srv.HTTPURL() + "/storage/v1/b/conns")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	for _, tc := range []struct {
		name string
		tr   *http.Transport
		want int64 // connections added by 3 requests
	}{
		{"keep-alive", &http.Transport{}, 1},
		{"a connection per request", &http.Transport{DisableKeepAlives: true}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := srv.HTTPConns()
			hc := &http.Client{Transport: tc.tr}
			defer tc.tr.CloseIdleConnections()
			for range 3 {
				get(hc)
			}
			if got := srv.HTTPConns() - before; got != tc.want {
				t.Fatalf("%d connections for 3 requests, want %d", got, tc.want)
			}
		})
	}
}
