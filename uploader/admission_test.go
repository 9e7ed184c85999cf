package uploader_test

import (
	"bytes"
	"context"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/uploader"
)

// TestRefusedWriteIsRetried: a write the service refuses for load
// (RESOURCE_EXHAUSTED) was not applied, so it is retried even without a
// precondition (which the default policy needs for any other failure), and
// the object is stored once; with WithoutAdmission too.
func TestRefusedWriteIsRetried(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method string
		size   int
		opts   []uploader.WriterOption
	}{
		{"one-shot", fakes.MethodWriteObject, kib, nil},
		{"resumable start", fakes.MethodStartResumableWrite, 3 * mib, nil},
	} {
		for _, admission := range []bool{true, false} {
			name := tc.name
			if !admission {
				name += "/without admission"
			}
			t.Run(name, func(t *testing.T) {
				var e *env
				if admission {
					e = newEnv(t)
				} else {
					e = newEnv(t, uploader.WithoutAdmission())
				}
				e.srv.FailCall(tc.method, 1, codes.ResourceExhausted)
				e.srv.FailCall(tc.method, 2, codes.ResourceExhausted)
				data := payload(tc.size, 51)
				if _, err := e.c.Upload(context.Background(), bucket, "refused", bytes.NewReader(data), tc.opts...); err != nil {
					t.Fatalf("Upload: %v", err)
				}
				sameBytes(t, "stored", e.content("refused"), data)
				if n := e.countCalls(tc.method); n != 3 {
					t.Fatalf("%d calls of %s, want the two refused and the one that stored", n, tc.method)
				}
			})
		}
	}
}
