package integration

import (
	"bytes"
	"context"
	"hash/crc32"
	"testing"

	"cloud.google.com/go/storage"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/uploader"
)

// TestAppendableWithTheOfficialClient hands appendable objects between
// objup and the official client (its Writer with Append, and
// NewWriterFromAppendableObject) on the fake, both ways: one creates and
// flushes the object and leaves it unfinalized, the other takes it over at
// its generation, appends and finalizes. The object must be byte-exact
// with the CRC32C of all of it.
func TestAppendableWithTheOfficialClient(t *testing.T) {
	srv, err := fakes.New(fakes.WithBucket(benchBucket))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	official, ours := officialGRPC(t, srv), objupClient(t, srv)
	first, second := payload(300<<10+7, 1), payload(70<<10+3, 2)
	whole := append(append([]byte(nil), first...), second...)
	crc := crc32.Checksum(whole, crc32.MakeTable(crc32.Castagnoli))

	t.Run("official creates, objup takes over", func(t *testing.T) {
		w := official.Bucket(benchBucket).Object("a").NewWriter(ctx)
		w.Append = true
		if _, err := w.Write(first); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil { // not finalized: Append without FinalizeOnClose
			t.Fatal(err)
		}
		o, err := srv.Object(benchBucket, "a")
		if err != nil {
			t.Fatal(err)
		}
		ow, off, err := ours.TakeOver(ctx, benchBucket, "a", o.Generation)
		if err != nil || off != int64(len(first)) {
			t.Fatalf("TakeOver: offset %d, %v; want %d", off, err, len(first))
		}
		ow.Write(second)
		if err := ow.Close(); err != nil {
			t.Fatal(err)
		}
		check(t, srv, "a", whole, crc)
	})
	t.Run("objup creates, official takes over", func(t *testing.T) {
		w, err := ours.NewWriter(ctx, benchBucket, "b", uploader.WithAppendable(), uploader.WithoutFinalize())
		if err != nil {
			t.Fatal(err)
		}
		w.Write(first)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		gen := w.Attrs().Generation
		ow, off, err := official.Bucket(benchBucket).Object("b").Generation(gen).NewWriterFromAppendableObject(ctx, &storage.AppendableWriterOpts{FinalizeOnClose: true})
		if err != nil || off != int64(len(first)) {
			t.Fatalf("NewWriterFromAppendableObject: offset %d, %v; want %d", off, err, len(first))
		}
		ow.Write(second)
		if err := ow.Close(); err != nil {
			t.Fatal(err)
		}
		check(t, srv, "b", whole, crc)
	})
}

// check fails t unless object name holds want, finalized, with CRC32C crc.
func check(t *testing.T, srv *fakes.Server, name string, want []byte, crc uint32) {
	t.Helper()
	o, err := srv.Object(benchBucket, name)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(o.Content, want) || o.CRC32C != crc || o.Finalized.IsZero() {
		t.Fatalf("%s: %d bytes, CRC32C %08x, finalized %v; want %d bytes, %08x, finalized", name, len(o.Content), o.CRC32C, o.Finalized, len(want), crc)
	}
}
