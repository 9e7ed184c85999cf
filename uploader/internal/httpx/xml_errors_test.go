package httpx

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/uploader/internal/retry"
	"github.com/objup/objup/uploader/internal/xfer"
)

// TestXMLErrors: every XML call reads GCS's XML error documents into the
// code the retries and the modes act on: NoSuchUpload is NotFound, a
// digest refused DataLoss (as is a 400 that says a checksum did not
// match), the HTTP status otherwise; 429 and 503 are pushback, retried;
// the document's code and message stay in the error's text.
func TestXMLErrors(t *testing.T) {
	for _, tc := range []struct {
		sc        int
		xmlCode   string // "": the body is plain text
		msg       string
		code      codes.Code
		retryable bool
		pushback  bool
	}{
		{sc: http.StatusNotFound, xmlCode: "NoSuchUpload", msg: "The requested upload was not found.", code: codes.NotFound},
		// The document's code names the upload gone, whatever the status.
		{sc: http.StatusBadRequest, xmlCode: "NoSuchUpload", msg: "The requested upload was not found.", code: codes.NotFound},
		{sc: http.StatusNotFound, xmlCode: "NoSuchKey", msg: "The specified key does not exist.", code: codes.NotFound},
		{sc: http.StatusBadRequest, xmlCode: "BadDigest", msg: "The CRC32C you specified did not match what we received.", code: codes.DataLoss},
		{sc: http.StatusBadRequest, xmlCode: "InvalidDigest", msg: "The digest is not valid.", code: codes.DataLoss},
		{sc: http.StatusBadRequest, xmlCode: "InvalidArgument", msg: "The crc32c hash does not match the content.", code: codes.DataLoss},
		{sc: http.StatusBadRequest, xmlCode: "EntityTooSmall", msg: "Your proposed upload is smaller than the minimum allowed object size.", code: codes.InvalidArgument},
		{sc: http.StatusBadRequest, xmlCode: "InvalidPart", msg: "One or more of the specified parts could not be found.", code: codes.InvalidArgument},
		{sc: http.StatusForbidden, xmlCode: "AccessDenied", msg: "Access denied.", code: codes.PermissionDenied},
		{sc: http.StatusUnauthorized, xmlCode: "AuthenticationRequired", msg: "Authentication required.", code: codes.Unauthenticated},
		{sc: http.StatusPreconditionFailed, xmlCode: "PreconditionFailed", msg: "At least one of the pre-conditions you specified did not hold.", code: codes.FailedPrecondition},
		{sc: http.StatusTooManyRequests, xmlCode: "SlowDown", msg: "Please reduce your request rate.", code: codes.ResourceExhausted, retryable: true, pushback: true},
		{sc: http.StatusServiceUnavailable, xmlCode: "ServiceUnavailable", msg: "Service unavailable.", code: codes.Unavailable, retryable: true, pushback: true},
		{sc: http.StatusInternalServerError, xmlCode: "InternalError", msg: "We encountered an internal error.", code: codes.Internal, retryable: true},
		{sc: http.StatusBadGateway, msg: "upstream connect error", code: codes.Unavailable, retryable: true},
	} {
		name := fmt.Sprintf("%d %s", tc.sc, tc.xmlCode)
		t.Run(name, func(t *testing.T) {
			s := &xmlService{answer: func(w http.ResponseWriter, _ xmlRequest) {
				if tc.xmlCode == "" {
					http.Error(w, tc.msg, tc.sc)
					return
				}
				xmlError(w, tc.sc, tc.xmlCode, tc.msg)
			}}
			m := newXML(t, s)
			a := new(testAlloc)
			u, r := newUpload(a, payload(1000))
			calls := map[string]func() error{
				"initiate": func() error { _, err := m.Initiate(u, xmlTimeout); return err },
				"part": func() error {
					_, _, err := m.UploadPart(u, "ID", 1, []*xfer.ChunkRef{r}, 1000, u.Scratch.CRC, xmlTimeout)
					return err
				},
				"list parts": func() error { _, err := m.ListParts(u, "ID", xmlTimeout); return err },
				"complete": func() error {
					_, err := m.Complete(u, "ID", []xfer.MultipartPart{{Number: 1, ETag: "e"}}, xmlTimeout)
					return err
				},
				"abort":        func() error { return m.Abort(u, "ID", xmlTimeout) },
				"list uploads": func() error { _, err := m.ListUploads(u, time.Time{}, time.Now(), xmlTimeout); return err },
			}
			for call, f := range calls {
				err := f()
				want := fmt.Sprintf("HTTP %d: %s", tc.sc, tc.msg)
				if tc.xmlCode != "" {
					want = fmt.Sprintf("HTTP %d: %s: %s", tc.sc, tc.xmlCode, tc.msg)
				}
				switch st, _ := status.FromError(err); {
				case st.Code() != tc.code:
					t.Errorf("%s: %v, want code %v", call, err, tc.code)
				case st.Message() != want:
					t.Errorf("%s: message %q, want %q", call, st.Message(), want)
				case retry.ShouldRetry(err) != tc.retryable || retry.IsPushback(err) != tc.pushback:
					t.Errorf("%s: %v: retried %v, pushback %v; want %v, %v", call, err, retry.ShouldRetry(err), retry.IsPushback(err), tc.retryable, tc.pushback)
				}
			}
			r.Unref()
			u.Life.Wait()
			a.mu.Lock()
			defer a.mu.Unlock()
			if a.out != 0 {
				t.Fatalf("%d buffers not given back", a.out)
			}
		})
	}
}
