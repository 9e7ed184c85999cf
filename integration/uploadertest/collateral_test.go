package uploadertest_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"google.golang.org/api/option"
	"google.golang.org/grpc/codes"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/uploader"
)

// TestTimeoutBreaksNoOtherUpload: one connection carries a healthy
// resumable upload and a one-shot upload of several messages (a 4 MiB
// chunk goes out as two messages of one WriteObject stream) that the
// service answers too late for its attempt timeout. Its attempts time out
// again and again; each one's stream is reset, never the connection: the
// healthy upload beside them is never broken, so it never has to ask the
// session's status and resume, and it stores its object.
func TestTimeoutBreaksNoOtherUpload(t *testing.T) {
	e := newEnv(t, option.WithGRPCConnectionPool(1))
	e.srv.Delay(fakes.MethodWriteObject, 1500*time.Millisecond)
	// The healthy upload's stream waits too, so that it is open on the
	// connection while the other's attempts time out.
	e.srv.Delay(fakes.MethodBidiWriteObject, time.Second)

	healthy := payload(8*mib, 46)
	done := make(chan error, 1)
	go func() {
		_, err := e.c.Upload(context.Background(), bucket, "healthy", bytes.NewReader(healthy))
		done <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	_, err := e.c.Upload(ctx, bucket, "timing-out", bytes.NewReader(payload(3*mib, 47)),
		uploader.WithChunkSize(4*mib), uploader.WithConditions(uploader.Conditions{DoesNotExist: true}),
		uploader.WithRetry(uploader.Retry{AttemptTimeout: 300 * time.Millisecond}))
	if err == nil {
		t.Fatal("the upload whose every attempt times out succeeded")
	}
	if err := <-done; err != nil {
		t.Fatalf("the healthy upload: %v", err)
	}
	sameBytes(t, "healthy", e.content("healthy"), healthy)
	if n := e.countCalls(fakes.MethodQueryWriteStatus); n != 0 {
		t.Fatalf("the healthy upload asked its session's status %d times: its stream was broken by another upload's timeout", n)
	}
	if n := e.countCalls(fakes.MethodBidiWriteObject); n != 1 {
		t.Fatalf("the healthy upload opened %d streams, want 1", n)
	}
}

// TestFinishRecoveryRefused: the finish of a resumable upload goes out,
// the service finalizes the session, and the answer is lost; the status
// query of the recovery is then refused (InvalidArgument, Unauthenticated
// or ResourceExhausted from a service having a bad moment). The upload
// must not report a known failure for the object it stored: it cancels
// the session, which the service refuses as finalized, asks the session
// again, and succeeds with the stored object.
func TestFinishRecoveryRefused(t *testing.T) {
	for _, code := range []codes.Code{codes.InvalidArgument, codes.Unauthenticated, codes.ResourceExhausted} {
		t.Run(code.String(), func(t *testing.T) {
			e := newEnv(t)
			e.srv.LoseAnswer(fakes.MethodBidiWriteObject)
			e.srv.FailCall(fakes.MethodQueryWriteStatus, 1, code)
			data := payload(3*mib, 48)
			a, err := e.c.Upload(context.Background(), bucket, "obj", bytes.NewReader(data))
			if err != nil {
				t.Fatalf("Upload: %v (outcome unknown %v); stored: %v", err, uploader.IsOutcomeUnknown(err), e.exists("obj"))
			}
			sameBytes(t, "stored", e.content("obj"), data)
			if o, _ := e.srv.Object(bucket, "obj"); a.Generation != o.Generation {
				t.Fatalf("generation %d, the stored one is %d", a.Generation, o.Generation)
			}
		})
	}
}

// TestLostAnswersCostNoLookups: an UploadMany of 16 small objects at once
// whose context ends while the service holds every write. Each write went
// out whole and its answer is lost, so each outcome is unknown; finding
// that out costs no call: no object is looked up (a look-up could not tell
// this upload's object from another's), and no connection is probed.
func TestLostAnswersCostNoLookups(t *testing.T) {
	e := newEnv(t)
	e.srv.Delay(fakes.MethodWriteObject, 2*time.Second)
	items := make([]uploader.Item, 16)
	for i := range items {
		items[i] = uploader.Item{Name: "many/" + string(rune('a'+i)), Data: payload(kib, uint64(i))}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res, err := e.c.UploadMany(ctx, bucket, items, uploader.WithConcurrency(16))
	if err == nil {
		t.Fatal("UploadMany succeeded while the service held every write")
	}
	for i, r := range res {
		if r.Err == nil || !uploader.IsOutcomeUnknown(r.Err) {
			t.Errorf("item %d: %v, want an unknown outcome", i, r.Err)
		}
	}
	if err := e.c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{fakes.MethodGetObject, fakes.MethodQueryWriteStatus} {
		if n := e.countCalls(m); n != 0 {
			t.Errorf("%d calls of %s to settle lost answers, want 0", n, m)
		}
	}
}

// TestIdenticalObjectIsNotOurs: an object of the same name, size and
// CRC32C was stored a moment before; then an upload of the same bytes is
// sent, and its context ends while the service holds it. Nothing tells
// the earlier object from one this upload may have stored, so the upload
// must not report success: its outcome is unknown.
func TestIdenticalObjectIsNotOurs(t *testing.T) {
	e := newEnv(t)
	data := payload(kib, 54)
	if _, err := e.c.Upload(context.Background(), bucket, "dup", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	e.srv.Delay(fakes.MethodWriteObject, 2*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res, err := e.c.UploadMany(ctx, bucket, []uploader.Item{{Name: "dup", Data: data}})
	if err == nil || res[0].Err == nil {
		t.Fatalf("UploadMany: %v: an identical object taken for this upload's", err)
	}
	if !uploader.IsOutcomeUnknown(res[0].Err) {
		t.Fatalf("UploadMany item: %v, want an unknown outcome", res[0].Err)
	}
}
