package fakes_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"github.com/googleapis/gax-go/v2"
	"github.com/googleapis/gax-go/v2/callctx"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/internal/wire"
)

// retryTestJSON is the retry test API's resource.
type retryTestJSON struct {
	ID           string              `json:"id"`
	Instructions map[string][]string `json:"instructions"`
	Completed    bool                `json:"completed"`
	Transport    string              `json:"transport"`
}

// newRetryTest creates a retry test and returns its id.
func newRetryTest(t *testing.T, srv *fakes.Server, transport string, instructions map[string][]string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"instructions": instructions, "transport": transport})
	r := do(t, srv, "POST", "/retry_test", body, "Content-Type", "application/json")
	var rt retryTestJSON
	r.decode(t, &rt)
	if r.status != http.StatusOK || rt.ID == "" {
		t.Fatalf("POST /retry_test: status %d, body %q", r.status, r.body)
	}
	return rt.ID
}

// retryTest reads retry test id.
func retryTest(t *testing.T, srv *fakes.Server, id string) retryTestJSON {
	t.Helper()
	r := do(t, srv, "GET", "/retry_test/"+id, nil)
	var rt retryTestJSON
	r.decode(t, &rt)
	if r.status != http.StatusOK {
		t.Fatalf("GET /retry_test/%s: status %d, body %q", id, r.status, r.body)
	}
	return rt
}

// completed fails the test unless retry test id consumed every instruction.
func completed(t *testing.T, srv *fakes.Server, id string) {
	t.Helper()
	if rt := retryTest(t, srv, id); !rt.Completed {
		t.Fatalf("retry test not completed; left: %q", rt.Instructions)
	}
}

// withTestID returns a context whose gRPC calls carry the retry test id.
func withTestID(ctx context.Context, id string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "x-retry-test-id", id)
}

func TestRetryTestAPIRejects(t *testing.T) {
	srv, _ := start(t)
	for _, tc := range []struct {
		name   string
		body   string
		status int
		says   string // in the error message
	}{
		{"not JSON", `{`, 400, "not a JSON object"},
		{"no instructions", `{"instructions": {}}`, 400, "instructions"},
		{"unknown transport", `{"instructions": {"storage.objects.get": ["return-503"]}, "transport": "SMTP"}`, 400, "SMTP"},
		{"unknown method", `{"instructions": {"storage.objects.frob": ["return-503"]}}`, 400, "storage.objects.frob"},
		{"method not served over HTTP", `{"instructions": {"storage.objects.restore": ["return-503"]}}`, 501, "storage.objects.restore is not implemented by the fake over HTTP"},
		{"method not served over gRPC", `{"instructions": {"storage.bucket_acl.list": ["return-503"]}, "transport": "GRPC"}`, 501, "storage.bucket_acl.list is not implemented by the fake over GRPC"},
		{"unknown instruction", `{"instructions": {"storage.objects.get": ["return-teapot"]}}`, 400, "return-teapot"},
		{"status below 400", `{"instructions": {"storage.objects.get": ["return-200"]}}`, 400, "return-200"},
		{"redirect over HTTP", `{"instructions": {"storage.objects.insert": ["redirect-send-token-abc"]}}`, 501, "redirect-send-token-abc"},
		{"redirect of a read", `{"instructions": {"storage.objects.get": ["redirect-send-handle-and-token-abc"]}, "transport": "GRPC"}`, 501, "BidiWriteObject"},
		{"bad redirect token", `{"instructions": {"storage.objects.insert": ["redirect-expect-token-A1"]}, "transport": "GRPC"}`, 400, "redirect-expect-token-A1"},
		{"unsupported instruction", `{"instructions": {"storage.objects.get": ["return-503-if-dp-enforced"]}, "transport": "GRPC"}`, 501, "return-503-if-dp-enforced"},
		{"after-bytes on a read", `{"instructions": {"storage.objects.get": ["return-503-after-256K"]}}`, 501, "uploads"},
		{"broken stream on a gRPC listing", `{"instructions": {"storage.objects.list": ["return-broken-stream"]}, "transport": "GRPC"}`, 501, "reads"},
		{"stall over gRPC", `{"instructions": {"storage.objects.insert": ["stall-for-1s-after-1K"]}, "transport": "GRPC"}`, 501, "HTTP"},
		{"status without a gRPC code", `{"instructions": {"storage.objects.get": ["return-418"]}, "transport": "GRPC"}`, 400, "418"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, srv, "POST", "/retry_test", []byte(tc.body), "Content-Type", "application/json")
			_, msg := r.errorReason(t, tc.status)
			if !strings.Contains(msg, tc.says) {
				t.Fatalf("message %q does not say %q", msg, tc.says)
			}
		})
	}
	if r := do(t, srv, "GET", "/retry_tests", nil); r.status != http.StatusOK || string(r.body) != `{"retry_test":[]}` {
		t.Fatalf("after rejected creations, GET /retry_tests: %d %s", r.status, r.body)
	}
}

func TestRetryTestAPILifecycle(t *testing.T) {
	srv, _ := start(t)
	id := newRetryTest(t, srv, "grpc", map[string][]string{
		"storage.objects.insert": {"return-503-after-256K", "return-reset-connection"},
		"storage.objects.get":    {"return-broken-stream-after-256K"},
	})
	got := retryTest(t, srv, id)
	want := retryTestJSON{ID: id, Transport: "GRPC", Instructions: map[string][]string{
		"storage.objects.insert": {"return-503-after-256K", "return-reset-connection"},
		"storage.objects.get":    {"return-broken-stream-after-256K"},
	}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("GET: %+v, want %+v", got, want)
	}
	other := newRetryTest(t, srv, "", map[string][]string{"storage.objects.list": {"return-400"}})
	if rt := retryTest(t, srv, other); rt.Transport != "HTTP" {
		t.Fatalf("default transport %q, want HTTP", rt.Transport)
	}
	var list struct {
		RetryTest []retryTestJSON `json:"retry_test"`
	}
	do(t, srv, "GET", "/retry_tests", nil).decode(t, &list)
	if len(list.RetryTest) != 2 || list.RetryTest[0].ID != id || list.RetryTest[1].ID != other {
		t.Fatalf("GET /retry_tests: %+v", list)
	}
	if r := do(t, srv, "PUT", "/retry_test/"+id, nil); r.status != http.StatusNotImplemented {
		t.Fatalf("PUT: %d", r.status)
	}
	if r := do(t, srv, "DELETE", "/retry_test/"+id, nil); r.status != http.StatusOK {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	for _, m := range []string{"GET", "DELETE"} {
		do(t, srv, m, "/retry_test/"+id, nil).errorReason(t, http.StatusNotFound)
	}
	// A request naming a deleted or unknown test is served normally.
	put(t, dial(t, srv), "kept", []byte("x"))
	if r := do(t, srv, "GET", objPath("kept"), nil, "x-retry-test-id", id); r.status != http.StatusOK {
		t.Fatalf("GET with a deleted test's id: %d", r.status)
	}
}

// TestRetryTestHTTP drives the JSON front with each kind of instruction.
func TestRetryTestHTTP(t *testing.T) {
	data := payload(mib, 61)
	for _, tc := range []struct {
		name   string
		method string
		list   []string
		run    func(t *testing.T, srv *fakes.Server, id string)
	}{
		{"status on objects.get", "storage.objects.get", []string{"return-503", "return-429"}, func(t *testing.T, srv *fakes.Server, id string) {
			for _, st := range []int{503, 429} {
				reason, msg := do(t, srv, "GET", objPath("obj"), nil, "x-retry-test-id", id).errorReason(t, st)
				if reason == "" || !strings.Contains(msg, id) {
					t.Fatalf("status %d: reason %q, message %q", st, reason, msg)
				}
			}
			if r := do(t, srv, "GET", objPath("obj"), nil, "x-retry-test-id", id); r.status != http.StatusOK {
				t.Fatalf("third GET: %d", r.status)
			}
		}},
		{"status on a path-style read is XML", "storage.objects.get", []string{"return-401"}, func(t *testing.T, srv *fakes.Server, id string) {
			r := do(t, srv, "GET", "/"+bucket+"/obj", nil, "x-retry-test-id", id)
			if r.status != http.StatusUnauthorized || !strings.Contains(string(r.body), "<Error>") {
				t.Fatalf("status %d, body %q", r.status, r.body)
			}
		}},
		{"reset on objects.list", "storage.objects.list", []string{"return-reset-connection"}, func(t *testing.T, srv *fakes.Server, id string) {
			req, _ := http.NewRequestWithContext(ctxT(t), "GET", srv.HTTPURL()+"/storage/v1/b/"+bucket+"/o", nil)
			req.Header.Set("x-retry-test-id", id)
			c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			resp, err := c.Do(req)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("got %s, want the connection reset", resp.Status)
			}
			if !strings.Contains(err.Error(), "reset") && !strings.Contains(err.Error(), "EOF") {
				t.Fatalf("error %v, want a reset", err)
			}
		}},
		{"broken stream after 256 KiB of content", "storage.objects.get", []string{"return-broken-stream-after-256K"}, func(t *testing.T, srv *fakes.Server, id string) {
			got, err := partialRead(t, srv, objPath("obj")+"?alt=media", id)
			if !errors.Is(err, io.ErrUnexpectedEOF) || len(got) != 256<<10 {
				t.Fatalf("read %d bytes, error %v; want 262144 then an unexpected EOF", len(got), err)
			}
			sameBytes(t, "the bytes before the break", got, data[:len(got)])
		}},
		{"broken stream after 4 bytes", "storage.objects.get", []string{"return-broken-stream"}, func(t *testing.T, srv *fakes.Server, id string) {
			got, err := partialRead(t, srv, "/"+bucket+"/obj", id)
			if !errors.Is(err, io.ErrUnexpectedEOF) || len(got) != 4 {
				t.Fatalf("read %d bytes, error %v; want 4 then an unexpected EOF", len(got), err)
			}
		}},
		{"stall of a read", "storage.objects.get", []string{"stall-for-0s-after-1K"}, func(t *testing.T, srv *fakes.Server, id string) {
			got, err := partialRead(t, srv, objPath("obj")+"?alt=media", id)
			if err != nil {
				t.Fatal(err)
			}
			sameBytes(t, "content", got, data)
		}},
		{"resumable chunk cut after 256 KiB", "storage.objects.insert", []string{"return-503-after-256K"}, func(t *testing.T, srv *fakes.Server, id string) {
			loc := startSession(t, srv, "up", "", "ifGenerationMatch=0")
			r := do(t, srv, "PUT", loc, data, "Content-Range", fmt.Sprintf("bytes 0-%d/%d", len(data)-1, len(data)), "x-retry-test-id", id)
			r.errorReason(t, http.StatusServiceUnavailable)
			r = do(t, srv, "PUT", loc, nil, "Content-Range", "bytes */*")
			if r.status != http.StatusPermanentRedirect || r.header.Get("Range") != "bytes=0-262143" {
				t.Fatalf("status query: %d, Range %q", r.status, r.header.Get("Range"))
			}
			// The client resends the whole chunk: the persisted bytes are dropped.
			r = do(t, srv, "PUT", loc, data, "Content-Range", fmt.Sprintf("bytes 0-%d/%d", len(data)-1, len(data)), "x-retry-test-id", id)
			if r.status != http.StatusOK {
				t.Fatalf("resent chunk: %d %s", r.status, r.body)
			}
			media(t, srv, "up", data)
		}},
		{"resumable chunk after the limit was persisted", "storage.objects.insert", []string{"return-503-after-256K"}, func(t *testing.T, srv *fakes.Server, id string) {
			loc := startSession(t, srv, "up", "")
			half := len(data) / 2
			if r := do(t, srv, "PUT", loc, data[:half], "Content-Range", fmt.Sprintf("bytes 0-%d/*", half-1)); r.status != http.StatusPermanentRedirect {
				t.Fatalf("first half: %d", r.status)
			}
			r := do(t, srv, "PUT", loc, data[half:], "Content-Range", fmt.Sprintf("bytes %d-%d/%d", half, len(data)-1, len(data)), "x-retry-test-id", id)
			r.errorReason(t, http.StatusServiceUnavailable)
			r = do(t, srv, "PUT", loc, data[half:], "Content-Range", fmt.Sprintf("bytes %d-%d/%d", half, len(data)-1, len(data)), "x-retry-test-id", id)
			if r.status != http.StatusOK {
				t.Fatalf("second half, retried: %d %s", r.status, r.body)
			}
			media(t, srv, "up", data)
		}},
		{"single-shot upload reaching the limit", "storage.objects.insert", []string{"return-503-after-512K"}, func(t *testing.T, srv *fakes.Server, id string) {
			do(t, srv, "POST", uploadPath("media", "small"), data[:1000], "x-retry-test-id", id)
			if rt := retryTest(t, srv, id); rt.Completed {
				t.Fatal("an upload smaller than the limit consumed the instruction")
			}
			do(t, srv, "POST", uploadPath("media", "big"), data, "x-retry-test-id", id).errorReason(t, http.StatusServiceUnavailable)
			absentHTTP(t, srv, "big")
		}},
		{"the cancel of a session is storage.objects.delete", "storage.objects.delete", []string{"return-503"}, func(t *testing.T, srv *fakes.Server, id string) {
			loc := startSession(t, srv, "up", "")
			do(t, srv, "DELETE", loc, nil, "x-retry-test-id", id).errorReason(t, http.StatusServiceUnavailable)
			if r := do(t, srv, "DELETE", loc, nil, "x-retry-test-id", id); r.status != 499 {
				t.Fatalf("second DELETE: %d %s", r.status, r.body)
			}
		}},
		{"a gRPC test leaves HTTP requests alone", "", nil, func(t *testing.T, srv *fakes.Server, _ string) {
			id := newRetryTest(t, srv, "GRPC", map[string][]string{"storage.objects.get": {"return-503"}})
			if r := do(t, srv, "GET", objPath("obj"), nil, "x-retry-test-id", id); r.status != http.StatusOK {
				t.Fatalf("status %d", r.status)
			}
			if rt := retryTest(t, srv, id); rt.Completed {
				t.Fatal("an HTTP request consumed a gRPC instruction")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, cc := start(t)
			put(t, cc, "obj", data)
			var id string
			if tc.method != "" {
				id = newRetryTest(t, srv, "HTTP", map[string][]string{tc.method: tc.list})
			}
			tc.run(t, srv, id)
			if id != "" {
				completed(t, srv, id)
			}
		})
	}
}

// partialRead GETs path with the retry test id and returns what it read
// and the error that ended the body.
func partialRead(t *testing.T, srv *fakes.Server, path, id string) ([]byte, error) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctxT(t), "GET", srv.HTTPURL()+path, nil)
	req.Header.Set("x-retry-test-id", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %s", resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// absentHTTP fails the test if name is stored.
func absentHTTP(t *testing.T, srv *fakes.Server, name string) {
	t.Helper()
	if _, err := srv.Object(bucket, name); err == nil {
		t.Fatalf("object %q is stored", name)
	}
}

// TestRetryTestGRPCStatus checks the gRPC code of every status instruction
// and of a reset, the testbench's mapping.
func TestRetryTestGRPCStatus(t *testing.T) {
	srv, cc := start(t)
	put(t, cc, "obj", []byte("abc"))
	for _, tc := range []struct {
		instruction string
		code        codes.Code
	}{
		{"return-400", codes.InvalidArgument},
		{"return-401", codes.Unauthenticated},
		{"return-408", codes.Unavailable},
		{"return-429", codes.ResourceExhausted},
		{"return-500", codes.Internal},
		{"return-503", codes.Unavailable},
		{"return-504", codes.DeadlineExceeded},
		{"return-reset-connection", codes.Unavailable},
	} {
		t.Run(tc.instruction, func(t *testing.T) {
			id := newRetryTest(t, srv, "GRPC", map[string][]string{
				"storage.objects.get":    {tc.instruction},
				"storage.objects.list":   {tc.instruction},
				"storage.objects.delete": {tc.instruction},
			})
			ctx := withTestID(ctxT(t), id)
			req := &wire.GetObjectRequest{Bucket: bucketRes, Object: "obj"}
			_, err := getObject(ctx, cc, req)
			wantCode(t, err, tc.code)
			if _, err := getObject(ctx, cc, req); err != nil {
				t.Fatalf("second GetObject: %v", err)
			}
			err = cc.Invoke(ctx, "/google.storage.v2.Storage/ListObjects", &wire.ListObjectsRequest{Parent: bucketRes}, &wire.ListObjectsResponse{})
			wantCode(t, err, tc.code)
			_, _, err = readObject(ctx, cc, &wire.ReadObjectRequest{Bucket: bucketRes, Object: "missing"})
			wantCode(t, err, codes.NotFound) // get's instruction is spent
			err = cc.Invoke(ctx, "/google.storage.v2.Storage/DeleteObject", &wire.DeleteObjectRequest{Bucket: bucketRes, Object: "missing"}, &wire.Object{})
			wantCode(t, err, tc.code)
			completed(t, srv, id)
		})
	}
	// QueryWriteStatus consumes nothing, as in the testbench, and neither
	// does a call of another transport's test.
	up := startResumable(t, cc, spec("q"))
	id := newRetryTest(t, srv, "GRPC", map[string][]string{"storage.objects.insert": {"return-503"}})
	if _, err := queryWriteStatus(withTestID(ctxT(t), id), cc, up); err != nil {
		t.Fatal(err)
	}
	httpID := newRetryTest(t, srv, "HTTP", map[string][]string{"storage.objects.get": {"return-503"}})
	if _, err := getObject(withTestID(ctxT(t), httpID), cc, &wire.GetObjectRequest{Bucket: bucketRes, Object: "obj"}); err != nil {
		t.Fatal(err)
	}
	if retryTest(t, srv, id).Completed || retryTest(t, srv, httpID).Completed {
		t.Fatal("an instruction was consumed")
	}
}

// TestRetryTestGRPCReadBroken checks broken streams on ReadObject: the
// bytes up to the limit arrive, then codes.Unavailable; the next read is
// whole.
func TestRetryTestGRPCReadBroken(t *testing.T) {
	srv, cc := start(t)
	data := payload(3*mib, 62)
	put(t, cc, "obj", data)
	for _, tc := range []struct {
		instruction string
		bytes       int
	}{
		{"return-broken-stream", 4},
		{"return-broken-stream-after-256K", 256 << 10},
		{"return-broken-stream-after-2048K", 2 << 20}, // the end of the first message
		{"return-broken-stream-after-2049K", 2<<20 + 1<<10},
	} {
		t.Run(tc.instruction, func(t *testing.T) {
			id := newRetryTest(t, srv, "GRPC", map[string][]string{"storage.objects.get": {tc.instruction}})
			ctx := withTestID(ctxT(t), id)
			msgs, got, err := readObject(ctx, cc, &wire.ReadObjectRequest{Bucket: bucketRes, Object: "obj"})
			wantCode(t, err, codes.Unavailable)
			sameBytes(t, "the bytes before the break", got, data[:tc.bytes])
			for _, m := range msgs {
				if c := m.GetChecksummedData(); c.Crc32C == nil || *c.Crc32C != crcOf(c.Content) {
					t.Fatalf("a message of %d bytes has CRC32C %v", len(c.Content), c.Crc32C)
				}
			}
			completed(t, srv, id)
			sameBytes(t, "the next read", get(t, cc, "obj"), data)
		})
	}
}

// TestRetryTestGRPCUploadCut checks return-N-after-MK on uploads: the
// message that carries byte M is cut there, a resumable session keeps the
// bytes before it, a one-shot write keeps nothing, and a finish_write in
// the cut message does not count.
func TestRetryTestGRPCUploadCut(t *testing.T) {
	data := payload(5*mib, 63)
	const at = 1000 << 10
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, cc *grpc.ClientConn, ctx context.Context)
	}{
		{"resumable, BidiWriteObject", func(t *testing.T, cc *grpc.ClientConn, ctx context.Context) {
			up := startResumable(t, cc, spec("obj"))
			_, err := bidi(ctx, cc, bidiChunks(data, 2*mib, bidiUpload(up))...)
			wantCode(t, err, codes.Unavailable)
			st, err := queryWriteStatus(ctx, cc, up)
			if err != nil || st.GetPersistedSize() != at {
				t.Fatalf("QueryWriteStatus: %v, %v; want %d persisted", st, err, at)
			}
			msgs := bidiChunks(data[at:], 2*mib, bidiUpload(up))
			for _, m := range msgs {
				m.WriteOffset += at
			}
			crc := crcOf(data)
			msgs[len(msgs)-1].ObjectChecksums = &wire.ObjectChecksums{Crc32C: &crc}
			if _, err := bidi(ctx, cc, msgs...); err != nil {
				t.Fatalf("resumed: %v", err)
			}
			sameBytes(t, "object", get(t, cc, "obj"), data)
		}},
		{"resumable, one message with finish_write", func(t *testing.T, cc *grpc.ClientConn, ctx context.Context) {
			up := startResumable(t, cc, spec("obj"))
			small := data[:2*mib]
			_, err := writeObject(ctx, cc, chunks(small, 2*mib, withUpload(up))...)
			wantCode(t, err, codes.Unavailable)
			st, err := queryWriteStatus(ctx, cc, up)
			if err != nil || st.GetPersistedSize() != at {
				t.Fatalf("QueryWriteStatus: %v, %v; want %d persisted and not finalized", st, err, at)
			}
		}},
		{"one-shot, WriteObject", func(t *testing.T, cc *grpc.ClientConn, ctx context.Context) {
			_, err := writeObject(ctx, cc, chunks(data, 2*mib, withSpec(spec("obj")))...)
			wantCode(t, err, codes.Unavailable)
			absent(t, cc, "obj")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, cc := start(t)
			id := newRetryTest(t, srv, "GRPC", map[string][]string{"storage.objects.insert": {"return-503-after-1000K"}})
			tc.run(t, cc, withTestID(ctxT(t), id))
			completed(t, srv, id)
		})
	}
}

// TestRetryTestGRPCStreamStatus checks that a status instruction fails a
// stream only after the server has read the client's first message: the
// request log names the object that message names. A stream that fails
// sooner can make the client's first send return io.EOF instead of the
// status, which the official client does not retry; its reads must
// succeed every time.
func TestRetryTestGRPCStreamStatus(t *testing.T) {
	srv, cc := start(t, fakes.WithCallLog(100))
	data := payload(100, 64)
	put(t, cc, "obj", data)
	id := newRetryTest(t, srv, "GRPC", map[string][]string{
		"storage.objects.insert": {"return-503", "return-503"},
		"storage.objects.get":    {"return-503", "return-503"},
	})
	ctx := withTestID(ctxT(t), id)
	up := startResumable(t, cc, spec("resumed"))
	srv.ResetCalls()
	_, err := writeObject(ctx, cc, chunks(data, mib, withSpec(spec("oneshot")))...)
	wantCode(t, err, codes.Unavailable)
	_, err = bidi(ctx, cc, bidiChunks(data, mib, bidiUpload(up))...)
	wantCode(t, err, codes.Unavailable)
	_, _, err = readObject(ctx, cc, &wire.ReadObjectRequest{Bucket: bucketRes, Object: "obj"})
	wantCode(t, err, codes.Unavailable)
	st := rawBidiRead(t, ctx, cc)
	sendRaw(st, bidiReadMsg(true, "obj", 0, nil, [3]int64{0, 0, 1}))
	st.CloseSend()
	_, err = recvRaw(st)
	wantCode(t, err, codes.Unavailable)
	var got []string
	for _, c := range srv.Calls() {
		got = append(got, c.Method+" "+c.Bucket+"/"+c.Object+" "+c.Code.String())
	}
	want := []string{
		"WriteObject " + bucket + "/oneshot Unavailable",
		"BidiWriteObject " + bucket + "/resumed Unavailable",
		"ReadObject " + bucket + "/obj Unavailable",
		"BidiReadObject " + bucket + "/obj Unavailable",
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	c := officialBidi(t, srv)
	c.SetRetry(storage.WithBackoff(gax.Backoff{Initial: time.Millisecond, Max: time.Millisecond}))
	for i := range 20 {
		id := newRetryTest(t, srv, "GRPC", map[string][]string{"storage.objects.get": {"return-503"}})
		ctx := callctx.SetHeaders(ctxT(t), "x-retry-test-id", id)
		r, err := c.Bucket(bucket).Object("obj").NewReader(ctx)
		if err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		sameBytes(t, "content", got, data)
		completed(t, srv, id)
	}
}

// TestStartGRPC answers the testbench's start of its gRPC server as the
// testbench does once it listens: on the fake's own port, and refuses
// another.
func TestStartGRPC(t *testing.T) {
	srv, _ := start(t)
	_, port, _ := strings.Cut(srv.GRPCAddr(), ":")
	for _, q := range []string{"", "?port=" + port} {
		if r := do(t, srv, "GET", "/start_grpc"+q, nil); r.status != http.StatusOK || string(r.body) != port {
			t.Fatalf("start_grpc%s: %d %q", q, r.status, r.body)
		}
	}
	if _, msg := do(t, srv, "GET", "/start_grpc?port=1", nil).errorReason(t, http.StatusBadRequest); !strings.Contains(msg, srv.GRPCAddr()) {
		t.Fatalf("message %q does not name the address", msg)
	}
}
