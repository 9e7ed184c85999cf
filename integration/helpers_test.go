package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"cloud.google.com/go/storage"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/uploader"
)

const (
	kib = 1 << 10
	mib = 1 << 20
)

// testBucket is the bucket every test server starts with.
const testBucket = "objup-it"

// dialTo is the options that dial a test server's gRPC port at addr:
// plaintext, without credentials.
func dialTo(addr string) []option.ClientOption {
	return []option.ClientOption{
		option.WithEndpoint(addr),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
	}
}

// benchClients dials objup and the official gRPC client to the test
// server at addr, side by side; the caller closes both.
func benchClients(b testing.TB, addr string) (*uploader.Client, *storage.Client) {
	b.Helper()
	dial := dialTo(addr)
	ours, err := uploader.NewClient(context.Background(), dial...)
	if err != nil {
		b.Fatal(err)
	}
	official, err := storage.NewGRPCClient(context.Background(), append(dial, storage.WithDisabledClientMetrics())...)
	if err != nil {
		ours.Close()
		b.Fatal(err)
	}
	return ours, official
}

// officialGRPC returns the official client talking gRPC to srv, closed when
// the test ends. The endpoint is passed as an option, not through
// STORAGE_EMULATOR_HOST_GRPC, which would affect the whole process.
func officialGRPC(t testing.TB, srv *fakes.Server) *storage.Client {
	t.Helper()
	c, err := storage.NewGRPCClient(context.Background(),
		option.WithEndpoint(srv.GRPCAddr()),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
		storage.WithDisabledClientMetrics(), // else it probes the GCE metadata server
	)
	if err != nil {
		t.Fatalf("storage.NewGRPCClient: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// officialHTTP returns the official client talking to srv's JSON API (and
// its XML API for reads), closed when the test ends.
func officialHTTP(t testing.TB, srv *fakes.Server) *storage.Client {
	t.Helper()
	c, err := storage.NewClient(context.Background(),
		option.WithEndpoint(srv.HTTPURL()+"/storage/v1/"),
		option.WithoutAuthentication(),
	)
	if err != nil {
		t.Fatalf("storage.NewClient: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// payload returns n deterministic pseudo-random bytes, different per seed.
func payload(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16), 1})
	r.Read(b)
	return b
}

// write uploads data with w and closes it, failing the test on error.
func write(t testing.TB, w *storage.Writer, data []byte) *storage.ObjectAttrs {
	t.Helper()
	if _, err := w.Write(data); err != nil {
		w.Close()
		t.Fatalf("Write %s: %v", w.ObjectAttrs.Name, err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close %s: %v", w.ObjectAttrs.Name, err)
	}
	return w.Attrs()
}

// readAll reads an object whole with r's client.
func readAll(t testing.TB, o *storage.ObjectHandle) []byte {
	t.Helper()
	r, err := o.NewReader(context.Background())
	if err != nil {
		t.Fatalf("NewReader %s: %v", o.ObjectName(), err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read %s: %v", o.ObjectName(), err)
	}
	return b
}

// sameBytes fails the test unless got is want, byte for byte; it reports
// sizes and digests rather than megabytes of data.
func sameBytes(t testing.TB, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: got %d bytes (sha256 %x), want %d bytes (sha256 %x)", what, len(got), sha256.Sum256(got), len(want), sha256.Sum256(want))
	}
}

// put writes data as o with default writer settings.
func put(t testing.TB, o *storage.ObjectHandle, data []byte) *storage.ObjectAttrs {
	t.Helper()
	return write(t, o.NewWriter(context.Background()), data)
}

// fullRead reads into buf until it is full or r ends, and returns the count.
func fullRead(r io.Reader, buf []byte) (int, error) {
	n, err := io.ReadFull(r, buf)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}
