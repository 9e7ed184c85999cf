package uploadertest_test

import (
	"bytes"
	"context"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/header"
	"github.com/objup/objup/uploader"
)

// TestCreateOnlyCredentials: an uploader whose credential holds
// roles/storage.objectCreator alone (storage.objects.create, the usual
// role of an uploader) uploads one-shot, resumable (small ones
// WithResumable too) and appendable objects over both APIs where they
// exist: none of them needs a look-up, and a session is asked and
// cancelled on its own id. A lost answer whose look-up the credential may
// not make is an unknown outcome, never a PermissionDenied failure. A
// parallel upload needs get and delete, as its doc says: it fails with
// PermissionDenied, and the object is not stored.
func TestCreateOnlyCredentials(t *testing.T) {
	const zonal = "rapid-bkt"
	e := newEnvFake(t, []fakes.Option{fakes.WithCredential("creator", fakes.RoleObjectCreator), fakes.WithZonalBucket(zonal)})
	ctx := header.Append(context.Background(), "authorization", "Bearer creator")
	clients := map[string]*uploader.Client{"gRPC": e.c, "JSON": httpClient(t, e.srv.HTTPURL())}
	for tr, c := range clients {
		for _, tc := range []struct {
			name string
			size int
			opts []uploader.WriterOption
		}{
			{"one-shot", kib, []uploader.WriterOption{uploader.WithConditions(uploader.Conditions{DoesNotExist: true})}},
			{"small, resumable", kib, []uploader.WriterOption{uploader.WithResumable()}},
			{"resumable", 3 * mib, nil},
		} {
			name := tr + "/" + tc.name
			data := payload(tc.size, 50)
			if _, err := c.Upload(ctx, bucket, name, bytes.NewReader(data), tc.opts...); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			sameBytes(t, name, e.content(name), data)
		}
		// The credential may create, not overwrite (that needs delete).
		if _, err := c.Upload(ctx, bucket, tr+"/one-shot", bytes.NewReader([]byte("again"))); uploader.CodeOf(err) != codes.PermissionDenied || uploader.IsOutcomeUnknown(err) {
			t.Fatalf("%s: overwrite with a create-only credential: %v, want PermissionDenied", tr, err)
		}
		_, err := c.Upload(ctx, bucket, tr+"/parallel", bytes.NewReader(payload(5*q, 51)),
			uploader.WithParallelUpload(uploader.ParallelUpload{PartSize: 2 * q}))
		if uploader.CodeOf(err) != codes.PermissionDenied || uploader.IsOutcomeUnknown(err) {
			t.Fatalf("%s: parallel upload with a create-only credential: %v, want PermissionDenied", tr, err)
		}
		e.absent(tr + "/parallel")
	}

	// Appendable objects (gRPC): a Writer that flushes and finalizes, and
	// a small one in one stream.
	w, err := e.c.NewWriter(ctx, zonal, "log", uploader.WithAppendable())
	if err != nil {
		t.Fatal(err)
	}
	w.Write(payload(300*kib, 52))
	if _, err := w.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := e.c.Upload(ctx, zonal, "small", bytes.NewReader([]byte("x")), uploader.WithAppendable()); err != nil {
		t.Fatalf("small appendable: %v", err)
	}
	// A finish whose answer is lost, and whose object's stream cannot be
	// opened again, is looked up by generation; the credential may not
	// read: the outcome is unknown.
	w, err = e.c.NewWriter(ctx, zonal, "lost", uploader.WithAppendable(), uploader.WithRetry(uploader.Retry{MaxAttempts: 2}))
	if err != nil {
		t.Fatal(err)
	}
	w.Write(payload(300*kib, 53))
	if _, err := w.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	e.srv.LoseAnswer(fakes.MethodBidiWriteObject)
	for i := 1; i <= 5; i++ {
		e.srv.FailCall(fakes.MethodBidiWriteObject, i, codes.Unavailable)
	}
	if err := w.Close(); !uploader.IsOutcomeUnknown(err) || uploader.CodeOf(err) == codes.PermissionDenied {
		t.Fatalf("Close after a lost answer, look-up refused: %v, want an unknown outcome", err)
	}
}
