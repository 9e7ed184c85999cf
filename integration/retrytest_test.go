package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/googleapis/gax-go/v2"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/header"
	"github.com/objup/objup/uploader"
)

// suiteUploadInstructions are the instruction lists that the retry
// conformance suite of cloud.google.com/go/storage v1.70.0
// (internal/test/conformance/retry_tests.json) applies to uploads, that is
// to storage.objects.insert and its groups storage.resumable.upload and
// storage.appendable.upload, with the suite's test ids. The redirect
// instructions of tests 12 and 13 belong to appendable uploads, which
// objup does not make, so they are left out here (the fake serves them to
// the official client's appendable writer).
var suiteUploadInstructions = []struct {
	tests string
	list  []string
}{
	{"2", []string{"return-503", "return-503"}},
	{"2", []string{"return-reset-connection", "return-reset-connection"}},
	{"2, 7", []string{"return-reset-connection", "return-503"}},
	{"3", []string{"return-503"}},
	{"3", []string{"return-reset-connection"}},
	{"5", []string{"return-400"}},
	{"5", []string{"return-401"}},
	{"6", []string{"return-503", "return-400"}},
	{"6", []string{"return-reset-connection", "return-401"}},
	{"7, 10", []string{"return-408"}},
	{"7, 10, 11", []string{"return-503-after-256K"}},
	{"7", []string{"return-503-after-8192K", "return-408"}},
	{"7", []string{"return-503-after-4080K"}},
	{"7", []string{"return-503-after-1000K", "return-503-after-1024K", "return-503-after-1025K", "return-503-after-4000K", "return-503-after-4096K", "return-503-after-4097K"}},
	{"9", []string{"return-503-after-4097K"}},
	{"9", []string{"return-503-after-4097K", "return-408"}},
}

// uploadModes are the uploads run under each instruction list: one-shot
// (the object fits in one chunk: one WriteObject call) and resumable
// (StartResumableWrite, BidiWriteObject, and QueryWriteStatus to resume).
var uploadModes = []struct {
	name  string
	size  int
	chunk int // 0: the default chunk size (256 KiB)
}{
	{"oneshot-1KiB", 1 * kib, 0},
	{"oneshot-3MiB", 3 * mib, 4 * mib},
	{"resumable-300KiB", 300 * kib, 0},
	{"resumable-9MiB", 9 * mib, 4 * mib},
	{"resumable-20MiB", 20 * mib, 0},
}

// retryDeadline is objup's retry deadline in these tests: far longer than
// any of the suite's instruction lists needs, far shorter than the
// context's safety limit.
const retryDeadline = 2 * time.Second

// TestUploadRetryInstructions runs objup uploads, one-shot and resumable,
// with and without a precondition, under every upload instruction list of
// the official retry conformance suite, over gRPC. Each upload must end in
// a byte-exact object, or in an *uploader.Error whose code is one the
// instructions injected, with nothing stored. The outcome that objup's
// documented retry policy implies is checked too (a one-shot upload
// without a precondition is not retried, a resumable one resumes, 400 and
// 401 end the upload), and so is the consumption of the instructions, which
// shows that each reached the fake.
func TestUploadRetryInstructions(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket(testBucket), fakes.WithCallLog(0))
	c := objupClient(t, srv)
	for i, ins := range suiteUploadInstructions {
		for _, m := range uploadModes {
			for _, pre := range []bool{true, false} {
				name := fmt.Sprintf("%s/%s/precondition=%v", strings.Join(ins.list, ","), m.name, pre)
				t.Run(name, func(t *testing.T) {
					object := fmt.Sprintf("retry/%d/%s/%v", i, m.name, pre)
					data := payload(m.size, uint64(i*100+m.size))
					id := createRetryTest(t, srv, ins.list)
					err := upload(t, c, id, object, data, m.chunk, pre)
					checkOutcome(t, srv, object, data, err, ins.list)
					want, completed := expectedOutcome(ins.list, m.size, m.chunk, pre)
					if got := uploader.CodeOf(err); got != want {
						t.Errorf("upload ended with code %v (%v), want %v", got, err, want)
					}
					if rt := getRetryTest(t, srv, id); rt.Completed != completed {
						t.Errorf("retry test completed: %v, want %v; instructions left: %q", rt.Completed, completed, rt.Instructions)
					}
				})
			}
		}
	}
}

// TestUploadRetryDeadline checks that objup's retries stop at its retry
// deadline: under an endless run of 503s the upload fails with the last
// attempt's code, Unavailable, long before the instructions run out and
// before the context's own limit, and stores nothing.
func TestUploadRetryDeadline(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket(testBucket), fakes.WithCallLog(0))
	c := objupClient(t, srv)
	const n = 2000
	list := make([]string, n)
	for i := range list {
		list[i] = "return-503"
	}
	for _, m := range []struct {
		name string
		size int
	}{{"oneshot", kib}, {"resumable", 3 * mib}} {
		t.Run(m.name, func(t *testing.T) {
			id := createRetryTest(t, srv, list)
			object := "deadline/" + m.name
			err := upload(t, c, id, object, payload(m.size, 9), 0, true)
			checkOutcome(t, srv, object, nil, err, list)
			if got := uploader.CodeOf(err); got != codes.Unavailable {
				t.Fatalf("upload ended with %v (%v), want Unavailable from the retry deadline", got, err)
			}
			left := len(getRetryTest(t, srv, id).Instructions["storage.objects.insert"])
			if left == 0 {
				t.Fatalf("all %d instructions were consumed: the retries did not stop", n)
			}
			t.Logf("%d attempts before the retry deadline", n-left)
		})
	}
}

// objupClient returns an objup client of srv's gRPC server with a short
// backoff, closed when the test ends.
func objupClient(t *testing.T, srv *fakes.Server) *uploader.Client {
	t.Helper()
	c, err := uploader.NewClient(context.Background(),
		option.WithEndpoint(srv.GRPCAddr()),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
		uploader.WithRetry(uploader.Retry{Backoff: gax.Backoff{Initial: time.Millisecond, Max: 20 * time.Millisecond}, Deadline: retryDeadline, AttemptTimeout: 10 * time.Second}),
	)
	if err != nil {
		t.Fatalf("uploader.NewClient: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// upload writes data as object with the retry test id on every RPC. A
// context limit far beyond the retry deadline turns a hang into a failure.
func upload(t *testing.T, c *uploader.Client, id, object string, data []byte, chunk int, pre bool) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*retryDeadline+time.Minute)
	defer cancel()
	ctx = header.Append(ctx, "x-retry-test-id", id)
	var opts []uploader.WriterOption
	if chunk > 0 {
		opts = append(opts, uploader.WithChunkSize(chunk))
	}
	if pre {
		opts = append(opts, uploader.WithConditions(uploader.Conditions{DoesNotExist: true}))
	}
	_, err := c.Upload(ctx, testBucket, object, bytes.NewReader(data), opts...)
	if ctx.Err() != nil {
		t.Fatalf("the upload was still running at the context's limit: %v", err)
	}
	return err
}

// checkOutcome checks that an upload either stored data byte for byte, or
// failed with an *uploader.Error whose code one of the instructions
// injected, and stored nothing.
func checkOutcome(t *testing.T, srv *fakes.Server, object string, data []byte, err error, list []string) {
	t.Helper()
	stored, serr := srv.Object(testBucket, object)
	if err == nil {
		if serr != nil {
			t.Fatalf("the upload succeeded, but the object is not stored: %v", serr)
		}
		sameBytes(t, object, stored.Content, data)
		return
	}
	var ue *uploader.Error
	if !errors.As(err, &ue) {
		t.Fatalf("the upload failed with %T %v, want an *uploader.Error", err, err)
	}
	if status.Code(serr) != codes.NotFound {
		t.Fatalf("the upload failed (%v), but the object is stored (%d bytes; %v)", err, len(stored.Content), serr)
	}
	if code := ue.Code; !injected(list, code) {
		t.Fatalf("the upload failed with code %v (%v), which none of %q injects", code, err, list)
	}
}

// injected reports whether one of the instructions fails a gRPC call with
// code.
func injected(list []string, code codes.Code) bool {
	for _, in := range list {
		var c codes.Code
		switch {
		case in == "return-400":
			c = codes.InvalidArgument
		case in == "return-401":
			c = codes.Unauthenticated
		default: // 408, 503, resets and cut uploads
			c = codes.Unavailable
		}
		if c == code {
			return true
		}
	}
	return false
}

// expectedOutcome returns the code an upload must end with (codes.OK for
// success) as objup's documented policy decides it: a one-shot upload is
// retried only with a precondition, a resumable upload always resumes, and
// 400 and 401 are not retried. It also says whether the upload consumes
// every instruction: an after-bytes instruction applies only to an upload
// that reaches that byte, and the instructions after a failure are left.
func expectedOutcome(list []string, size, chunk int, pre bool) (code codes.Code, completed bool) {
	if chunk == 0 {
		chunk = 256 * kib
	}
	oneShot := size <= chunk
	for i, in := range list {
		last := i == len(list)-1
		var after int
		if n, err := fmt.Sscanf(in, "return-503-after-%dK", &after); n == 1 && err == nil {
			if size < after*kib {
				return codes.OK, false // never reached: this and the rest stay
			}
			if oneShot && !pre {
				return codes.Unavailable, last
			}
			continue
		}
		switch in {
		case "return-400":
			return codes.InvalidArgument, last
		case "return-401":
			return codes.Unauthenticated, last
		}
		if oneShot && !pre {
			return codes.Unavailable, last
		}
	}
	return codes.OK, true
}

// retryTestResource is the retry test API's resource.
type retryTestResource struct {
	ID           string              `json:"id"`
	Instructions map[string][]string `json:"instructions"`
	Completed    bool                `json:"completed"`
}

// createRetryTest creates a retry test over gRPC with the instructions for
// storage.objects.insert and returns its id; the test is deleted when t
// ends.
func createRetryTest(t *testing.T, srv *fakes.Server, list []string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"instructions": map[string][]string{"storage.objects.insert": list},
		"transport":    "GRPC",
	})
	resp, err := http.Post(srv.HTTPURL()+"/retry_test", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("POST /retry_test: %v", err)
	}
	defer resp.Body.Close()
	var rt retryTestResource
	if err := json.NewDecoder(resp.Body).Decode(&rt); err != nil || resp.StatusCode != http.StatusOK || rt.ID == "" {
		t.Fatalf("POST /retry_test: %s, %v, id %q", resp.Status, err, rt.ID)
	}
	t.Cleanup(func() {
		req, _ := http.NewRequest(http.MethodDelete, srv.HTTPURL()+"/retry_test/"+rt.ID, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	})
	return rt.ID
}

// getRetryTest returns the retry test id.
func getRetryTest(t *testing.T, srv *fakes.Server, id string) retryTestResource {
	t.Helper()
	resp, err := http.Get(srv.HTTPURL() + "/retry_test/" + id)
	if err != nil {
		t.Fatalf("GET /retry_test: %v", err)
	}
	defer resp.Body.Close()
	var rt retryTestResource
	if err := json.NewDecoder(resp.Body).Decode(&rt); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /retry_test/%s: %s, %v", id, resp.Status, err)
	}
	return rt
}
