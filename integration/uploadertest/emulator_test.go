package uploadertest_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/uploader"
)

// TestEmulatorEnv checks that STORAGE_EMULATOR_HOST_GRPC alone points a client
// with no options at an emulator, in plaintext and without credentials.
func TestEmulatorEnv(t *testing.T) {
	srv, err := fakes.New(fakes.WithBucket(bucket))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, v := range []string{srv.GRPCAddr(), "http://" + srv.GRPCAddr()} {
		t.Setenv("STORAGE_EMULATOR_HOST_GRPC", v)
		c, err := uploader.NewClient(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		data := payload(5*kib, 1)
		if _, err := c.Upload(context.Background(), bucket, "emu", bytes.NewReader(data)); err != nil {
			t.Fatalf("%s=%s: %v", "STORAGE_EMULATOR_HOST_GRPC", v, err)
		}
		c.Close()
		o, err := srv.Object(bucket, "emu")
		if err != nil {
			t.Fatal(err)
		}
		sameBytes(t, "stored", o.Content, data)
	}
}
