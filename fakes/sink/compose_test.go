package sink

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"cloud.google.com/go/storage"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/uploader"
)

// TestSinkCompose: a sink run WithCompose serves objup's parallel
// composite upload (parts written if absent, composed in two rounds,
// deleted) and the official client's Composer and Delete over gRPC, with
// the sizes, CRC32Cs and component counts the fake gives, and GCS's errors;
// a sink that keeps nothing refuses to compose.
func TestSinkCompose(t *testing.T) {
	k := NewTest(t, WithCompose())
	ctx := sinkCtx(t)
	ours, official := sinkClients(t, k)

	// objup's parallel upload: 41 parts (the last of 7 bytes), so two
	// composes of parts and a final one, of 41 components.
	data := sinkData(40*256<<10+7, 1)
	a, err := ours.Upload(ctx, sinkBucket, "big", bytes.NewReader(data),
		uploader.WithParallelUpload(uploader.ParallelUpload{PartSize: 256 << 10, Parts: 4}), uploader.WithConditions(uploader.Conditions{DoesNotExist: true}))
	if err != nil {
		t.Fatal(err)
	}
	if a.Size != int64(len(data)) || a.CRC32C != sinkCRC(data) {
		t.Fatalf("parallel upload: size %d CRC32C %08x, want %d %08x", a.Size, a.CRC32C, len(data), sinkCRC(data))
	}
	k.mu.Lock()
	for key := range k.kept {
		if strings.Contains(key, "objup-tmp/") {
			t.Errorf("temporary object %s left", key)
		}
	}
	k.mu.Unlock()
	// The object exists now: a write that needs it absent fails.
	if _, err := ours.Upload(ctx, sinkBucket, "big", bytes.NewReader(data[:10]), uploader.WithConditions(uploader.Conditions{DoesNotExist: true})); uploader.CodeOf(err) != codes.FailedPrecondition {
		t.Fatalf("write if absent over a kept object: %v, want FailedPrecondition", err)
	}

	// The official client's Composer and Delete.
	bkt := official.Bucket(sinkBucket)
	var want []byte
	for _, n := range []string{"a", "b"} {
		w := bkt.Object(n).NewWriter(ctx)
		part := sinkData(1000, n[0])
		want = append(want, part...)
		if _, err := w.Write(part); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	c, err := bkt.Object("ab").ComposerFrom(bkt.Object("a"), bkt.Object("b"), bkt.Object("big")).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	full := append(want, data...)
	if c.Size != int64(len(full)) || c.CRC32C != crc32c.Checksum(full) || c.ComponentCount != 1+1+41 {
		t.Fatalf("compose: size %d CRC32C %08x components %d, want %d %08x %d", c.Size, c.CRC32C, c.ComponentCount, len(full), sinkCRC(full), 43)
	}
	if _, err := bkt.Object("x").ComposerFrom(bkt.Object("a"), bkt.Object("missing")).Run(ctx); status.Code(errors.Unwrap(err)) != codes.NotFound && !errors.Is(err, storage.ErrObjectNotExist) {
		t.Fatalf("compose of a missing source: %v, want NotFound", err)
	}
	if _, err := bkt.Object("ab").If(storage.Conditions{DoesNotExist: true}).ComposerFrom(bkt.Object("a")).Run(ctx); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("compose over an existing object, if absent: %v, want FailedPrecondition", err)
	}
	if err := bkt.Object("a").Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if err := bkt.Object("a").Delete(ctx); !errors.Is(err, storage.ErrObjectNotExist) {
		t.Fatalf("second delete: %v, want ErrObjectNotExist", err)
	}

	// Without WithCompose, nothing is kept and nothing composes.
	_, pc := sinkClients(t, NewTest(t))
	pb := pc.Bucket(sinkBucket)
	if _, err := pb.Object("ab").ComposerFrom(pb.Object("a")).Run(context.Background()); status.Code(err) != codes.Unimplemented {
		t.Fatalf("compose on a sink that keeps nothing: %v, want Unimplemented", err)
	}
}
