package fakes_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// rangeStep is one request to a resumable session: its Content-Range, the
// bytes of the object it carries, whether its body is chunked (no
// Content-Length, as a client streaming a body sends it), and the answer
// expected: the status and, for a 308, the Range header.
type rangeStep struct {
	cr        string
	from, to  int // data[from:to]
	chunked   bool
	status    int
	wantRange string
}

// sendRange sends one step to the session at loc.
func sendRange(t *testing.T, loc string, data []byte, st rangeStep, hdr ...string) *reply {
	t.Helper()
	body := io.Reader(bytes.NewReader(data[st.from:st.to]))
	if st.chunked {
		body = io.MultiReader(body) // hides the length: the request is chunked
	}
	req, err := http.NewRequestWithContext(ctxT(t), "PUT", loc, body)
	if err != nil {
		t.Fatal(err)
	}
	if st.chunked {
		req.ContentLength = -1
	}
	if st.cr != "" {
		req.Header.Set("Content-Range", st.cr)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return &reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// TestJSONContentRangeForms sends every Content-Range form GCS accepts on a
// resumable session, alone and in sequence, and checks each answer and the
// object stored (or that none is).
func TestJSONContentRangeForms(t *testing.T) {
	srv, cc := start(t)
	const (
		q  = 256 << 10
		n  = mib + 5
		ok = http.StatusOK
		rs = http.StatusPermanentRedirect
		no = http.StatusBadRequest
	)
	data := payload(n, 77)
	big := payload(10*mib, 78)
	rng := func(last int) string { return fmt.Sprintf("bytes=0-%d", last) }
	for _, tc := range []struct {
		name   string
		data   []byte
		limit  string // X-Upload-Content-Length at the start
		steps  []rangeStep
		stored int // bytes of data stored at the end; -1: nothing
	}{
		{"A-B/T, whole object in one request", data, "", []rangeStep{
			{cr: fmt.Sprintf("bytes 0-%d/%d", n-1, n), to: n, status: ok}}, n},
		{"A-B/T, chunked body", data, "", []rangeStep{
			{cr: fmt.Sprintf("bytes 0-%d/%d", n-1, n), to: n, chunked: true, status: ok}}, n},
		{"A-B/*, then A-B/T", data, "", []rangeStep{
			{cr: fmt.Sprintf("bytes 0-%d/*", q-1), to: q, status: rs, wantRange: rng(q - 1)},
			{cr: fmt.Sprintf("bytes %d-%d/%d", q, n-1, n), from: q, to: n, status: ok}}, n},
		{"A-B/*, then */T completes", data, "", []rangeStep{
			{cr: fmt.Sprintf("bytes 0-%d/*", n-1), to: n, status: rs, wantRange: rng(n - 1)},
			{cr: fmt.Sprintf("bytes */%d", n), status: ok}}, n},
		{"*/T short of T is a status query", data, "", []rangeStep{
			{cr: fmt.Sprintf("bytes 0-%d/*", q-1), to: q, status: rs, wantRange: rng(q - 1)},
			{cr: fmt.Sprintf("bytes */%d", n), status: rs, wantRange: rng(q - 1)}}, -1},
		{"*/* is a status query", data, "", []rangeStep{
			{cr: "bytes */*", status: rs},
			{cr: fmt.Sprintf("bytes 0-%d/*", q-1), to: q, status: rs, wantRange: rng(q - 1)},
			{cr: "bytes */*", status: rs, wantRange: rng(q - 1)}}, -1},
		{"*/0, an empty object", nil, "", []rangeStep{
			{cr: "bytes */0", status: ok}}, 0},
		{"0-*/*, 1 KiB in a chunked body, as the Node.js client saves", data[:1<<10], "", []rangeStep{
			{cr: "bytes 0-*/*", to: 1 << 10, chunked: true, status: ok}}, 1 << 10},
		{"0-*/*, 10 MiB in a chunked body", big, "", []rangeStep{
			{cr: "bytes 0-*/*", to: 10 * mib, chunked: true, status: ok}}, 10 * mib},
		{"0-*/*, with Content-Length", data, "", []rangeStep{
			{cr: "bytes 0-*/*", to: n, status: ok}}, n},
		{"0-*/*, an empty body is an empty object", nil, "", []rangeStep{
			{cr: "bytes 0-*/*", chunked: true, status: ok}}, 0},
		{"0-*/T, the whole object with its size", data, "", []rangeStep{
			{cr: fmt.Sprintf("bytes 0-*/%d", n), to: n, chunked: true, status: ok}}, n},
		{"A-*/*, the rest after a chunk", data, "", []rangeStep{
			{cr: fmt.Sprintf("bytes 0-%d/*", q-1), to: q, status: rs, wantRange: rng(q - 1)},
			{cr: fmt.Sprintf("bytes %d-*/*", q), from: q, to: n, chunked: true, status: ok}}, n},
		{"A-*/*, a retry that overlaps", data, "", []rangeStep{
			{cr: fmt.Sprintf("bytes 0-%d/*", 2*q-1), to: 2 * q, status: rs, wantRange: rng(2*q - 1)},
			{cr: fmt.Sprintf("bytes %d-*/*", q), from: q, to: n, chunked: true, status: ok}}, n},
		{"A-*/T short of T continues", data, "", []rangeStep{
			{cr: fmt.Sprintf("bytes 0-*/%d", n), to: q, chunked: true, status: rs, wantRange: rng(q - 1)},
			{cr: fmt.Sprintf("bytes %d-*/%d", q, n), from: q, to: n, chunked: true, status: ok}}, n},
		{"A-*/* short of X-Upload-Content-Length continues", data, fmt.Sprint(n), []rangeStep{
			{cr: "bytes 0-*/*", to: q, chunked: true, status: rs, wantRange: rng(q - 1)},
			{cr: fmt.Sprintf("bytes %d-*/*", q), from: q, to: n, chunked: true, status: ok}}, n},
		{"A-*/T past T is refused", data, "", []rangeStep{
			{cr: fmt.Sprintf("bytes 0-*/%d", q), to: q + 1, chunked: true, status: no}}, -1},
		{"A-*/* with a gap is refused", data, "", []rangeStep{
			{cr: fmt.Sprintf("bytes %d-*/*", q), from: q, to: n, chunked: true, status: no},
			{cr: "bytes */*", status: rs}}, -1},
		{"0-*/* retried after completion gets the object", data, "", []rangeStep{
			{cr: "bytes 0-*/*", to: n, chunked: true, status: ok},
			{cr: "bytes 0-*/*", to: n, chunked: true, status: ok}}, n},
		{"no Content-Range: the body is the object", data, "", []rangeStep{
			{to: n, status: ok}}, n},
		{"A-B/T past T is refused", data, "", []rangeStep{
			{cr: fmt.Sprintf("bytes 0-%d/%d", n-1, n-1), to: n, status: no}}, -1},
		{"A-*/T starting past T is refused", data, "", []rangeStep{
			{cr: fmt.Sprintf("bytes %d-*/%d", n+1, n), status: no}}, -1},
		{"B-A is refused", data, "", []rangeStep{
			{cr: "bytes 5-1/*", to: 2, status: no}}, -1},
		{"*-B is refused", data, "", []rangeStep{
			{cr: "bytes *-1/*", to: 2, status: no}}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "forms/" + tc.name
			var hdr []string
			if tc.limit != "" {
				hdr = []string{"X-Upload-Content-Length", tc.limit}
			}
			r := do(t, srv, "POST", uploadPath("resumable", name), nil, hdr...)
			loc := r.header.Get("Location")
			if r.status != ok || loc == "" {
				t.Fatalf("session start: %d %q", r.status, r.body)
			}
			for i, st := range tc.steps {
				r := sendRange(t, loc, tc.data, st)
				if r.status != st.status || st.status == rs && r.header.Get("Range") != st.wantRange {
					t.Fatalf("step %d (%q, bytes %d to %d): status %d, Range %q; want %d, %q; body %q",
						i, st.cr, st.from, st.to, r.status, r.header.Get("Range"), st.status, st.wantRange, r.body)
				}
				if r.status == ok {
					var o jsonObject
					r.decode(t, &o)
					checkResource(t, o, name, tc.data[:tc.stored])
				}
			}
			if tc.stored < 0 {
				absent(t, cc, name)
				return
			}
			sameBytes(t, "stored", get(t, cc, name), tc.data[:tc.stored])
		})
	}
}

// TestJSONNodeSave sends the requests of the Node.js client's default
// upload (file.save and bucket.upload): a resumable start with the object
// resource in the body, then the whole content in one chunked request with
// Content-Range "bytes 0-*/*"; and the same cut by a retry test after
// 256 KiB, which the client resumes from the persisted size.
func TestJSONNodeSave(t *testing.T) {
	srv, cc := start(t)
	for _, size := range []int{1 << 10, 10 * mib} {
		data := payload(size, byte(size>>10))
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			name := fmt.Sprintf("node/%d", size)
			loc := startSession(t, srv, "", fmt.Sprintf(`{"name":%q,"contentType":"text/plain","metadata":{"k":"v"}}`, name),
				"predefinedAcl=projectPrivate")
			r := sendRange(t, loc, data, rangeStep{cr: "bytes 0-*/*", to: size, chunked: true})
			var o jsonObject
			r.decode(t, &o)
			checkResource(t, o, name, data)
			if o.ContentType != "text/plain" || o.Metadata["k"] != "v" {
				t.Fatalf("resource %+v", o)
			}
			sameBytes(t, "stored", get(t, cc, name), data)
		})
	}
	t.Run("cut after 256 KiB, resumed", func(t *testing.T) {
		data := payload(mib+3, 9)
		name := "node/resumed"
		id := newRetryTest(t, srv, "", map[string][]string{"storage.objects.insert": {"return-503-after-256K"}})
		loc := startSession(t, srv, name, `{"contentType":"text/plain"}`)
		r := sendRange(t, loc, data, rangeStep{cr: "bytes 0-*/*", to: len(data), chunked: true}, "x-retry-test-id", id)
		if r.status != http.StatusServiceUnavailable {
			t.Fatalf("cut request: status %d %q", r.status, r.body)
		}
		completed(t, srv, id)
		r = sendRange(t, loc, data, rangeStep{cr: "bytes */*"})
		if r.status != http.StatusPermanentRedirect || r.header.Get("Range") != "bytes=0-262143" {
			t.Fatalf("status query: %d, Range %q", r.status, r.header.Get("Range"))
		}
		r = sendRange(t, loc, data, rangeStep{cr: "bytes 262144-*/*", from: 256 << 10, to: len(data), chunked: true})
		var o jsonObject
		r.decode(t, &o)
		checkResource(t, o, name, data)
		sameBytes(t, "stored", get(t, cc, name), data)
	})
	t.Run("bucket.upload of a file", func(t *testing.T) {
		// bucket.upload streams a file the same way; its size is known,
		// and the start declares it.
		data := payload(3*mib+1, 11)
		name := "node/file"
		r := do(t, srv, "POST", uploadPath("resumable", name), []byte(`{"contentType":"application/octet-stream"}`),
			"Content-Type", "application/json", "X-Upload-Content-Length", fmt.Sprint(len(data)))
		loc := r.header.Get("Location")
		if !strings.Contains(loc, "upload_id=") {
			t.Fatalf("start: %d %q", r.status, r.body)
		}
		r = sendRange(t, loc, data, rangeStep{cr: "bytes 0-*/*", to: len(data), chunked: true})
		var o jsonObject
		r.decode(t, &o)
		checkResource(t, o, name, data)
	})
}
