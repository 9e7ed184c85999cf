package fakes_test

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/internal/wire"
)

// jsonObject is the part of the JSON API's object resource the tests read.
type jsonObject struct {
	Kind, Name, Bucket, ContentType, ContentEncoding, CacheControl, StorageClass string
	Generation, Metageneration, Size                                             string
	Crc32c, Md5Hash, Etag, TimeCreated, Updated, TimeDeleted, CustomTime         string
	Metadata                                                                     map[string]string
}

type jsonList struct {
	Kind          string
	Items         []jsonObject
	Prefixes      []string
	NextPageToken string
}

// reply is an HTTP response read whole.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// decode decodes the reply's JSON body into v, failing the test if it is
// not JSON.
func (r *reply) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("status %d, body %q: %v", r.status, r.body, err)
	}
}

// errorReason checks that the reply is a GCS JSON error with status st and
// returns its reason and message.
func (r *reply) errorReason(t *testing.T, st int) (string, string) {
	t.Helper()
	if r.status != st {
		t.Fatalf("status %d, want %d; body %q", r.status, st, r.body)
	}
	var e struct {
		Error struct {
			Code    int
			Message string
			Errors  []struct{ Message, Domain, Reason string }
		}
	}
	r.decode(t, &e)
	if e.Error.Code != st || e.Error.Message == "" || len(e.Error.Errors) != 1 || e.Error.Errors[0].Domain != "global" {
		t.Fatalf("error body %q", r.body)
	}
	return e.Error.Errors[0].Reason, e.Error.Message
}

// do sends one request to the fake's HTTP server and reads the reply.
func do(t *testing.T, srv *fakes.Server, method, path string, body []byte, hdr ...string) *reply {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	u := path
	if !strings.HasPrefix(path, "http") {
		u = srv.HTTPURL() + path
	}
	req, err := http.NewRequestWithContext(ctxT(t), method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
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

func objPath(name string) string { return "/storage/v1/b/" + bucket + "/o/" + url.PathEscape(name) }

func uploadPath(typ, name string, query ...string) string {
	p := "/upload/storage/v1/b/" + bucket + "/o?uploadType=" + typ
	if name != "" {
		p += "&name=" + url.QueryEscape(name)
	}
	for _, q := range query {
		p += "&" + q
	}
	return p
}

// b64CRC is the JSON API's form of the CRC32C of data.
func b64CRC(data []byte) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], crcOf(data))
	return base64.StdEncoding.EncodeToString(b[:])
}

func b64MD5(data []byte) string {
	s := md5.Sum(data)
	return base64.StdEncoding.EncodeToString(s[:])
}

// checkResource checks an object resource against the content it must
// describe.
func checkResource(t *testing.T, o jsonObject, name string, data []byte) {
	t.Helper()
	if o.Kind != "storage#object" || o.Name != name || o.Bucket != bucket || o.Size != strconv.Itoa(len(data)) ||
		o.Crc32c != b64CRC(data) || o.Md5Hash != b64MD5(data) || o.Generation == "" || o.Metageneration == "" ||
		o.Etag == "" || o.TimeCreated == "" || o.Updated == "" || o.StorageClass != "STANDARD" {
		t.Fatalf("resource %+v for %q of %d bytes", o, name, len(data))
	}
}

// media reads name's content over the JSON API and checks it is data, byte
// for byte, with the headers GCS sends.
func media(t *testing.T, srv *fakes.Server, name string, data []byte) {
	t.Helper()
	r := do(t, srv, "GET", objPath(name)+"?alt=media", nil)
	if r.status != http.StatusOK {
		t.Fatalf("alt=media %s: status %d %q", name, r.status, r.body)
	}
	sameBytes(t, "content of "+name, r.body, data)
	if h := r.header.Get("X-Goog-Hash"); h != "crc32c="+b64CRC(data)+",md5="+b64MD5(data) {
		t.Fatalf("x-goog-hash %q", h)
	}
	if r.header.Get("X-Goog-Generation") == "" || r.header.Get("X-Goog-Metageneration") == "" ||
		r.header.Get("X-Goog-Stored-Content-Length") != strconv.Itoa(len(data)) {
		t.Fatalf("headers %v", r.header)
	}
}

func TestJSONUploads(t *testing.T) {
	srv, cc := start(t)
	for _, size := range []int{0, 1, 1 << 10, 3*mib + 7} {
		data := payload(size, byte(size))
		t.Run(fmt.Sprintf("media/%d", size), func(t *testing.T) {
			name := fmt.Sprintf("media/%d", size)
			r := do(t, srv, "POST", uploadPath("media", name), data, "Content-Type", "text/x-media")
			var o jsonObject
			r.decode(t, &o)
			checkResource(t, o, name, data)
			if o.ContentType != "text/x-media" {
				t.Fatalf("content type %q", o.ContentType)
			}
			media(t, srv, name, data)
			sameBytes(t, "gRPC read", get(t, cc, name), data)
		})
		t.Run(fmt.Sprintf("multipart/%d", size), func(t *testing.T) {
			name := fmt.Sprintf("multipart/%d", size)
			meta := fmt.Sprintf(`{"name":%q,"metadata":{"k":"v"},"cacheControl":"no-cache","crc32c":%q,"md5Hash":%q}`, name, b64CRC(data), b64MD5(data))
			body, ctype := multipartBody(t, meta, "image/x-test", data)
			r := do(t, srv, "POST", uploadPath("multipart", ""), body, "Content-Type", ctype)
			var o jsonObject
			r.decode(t, &o)
			checkResource(t, o, name, data)
			if o.ContentType != "image/x-test" || o.Metadata["k"] != "v" || o.CacheControl != "no-cache" {
				t.Fatalf("resource %+v", o)
			}
			media(t, srv, name, data)
		})
		t.Run(fmt.Sprintf("resumable/%d", size), func(t *testing.T) {
			name := fmt.Sprintf("resumable/%d", size)
			loc := startSession(t, srv, name, `{"contentType":"application/x-r","metadata":{"a":"b"}}`)
			// In chunks of 1 MiB, with a status query after the first.
			chunk := mib
			off := 0
			for {
				end := min(off+chunk, len(data))
				last := end == len(data)
				total := "*"
				if last {
					total = strconv.Itoa(len(data))
				}
				cr := fmt.Sprintf("bytes %d-%d/%s", off, end-1, total)
				if end == off {
					cr = "bytes */" + total
				}
				r := do(t, srv, "PUT", loc, data[off:end], "Content-Range", cr)
				if last {
					var o jsonObject
					r.decode(t, &o)
					checkResource(t, o, name, data)
					if o.ContentType != "application/x-r" || o.Metadata["a"] != "b" {
						t.Fatalf("resource %+v", o)
					}
					break
				}
				if r.status != http.StatusPermanentRedirect || r.header.Get("Range") != fmt.Sprintf("bytes=0-%d", end-1) {
					t.Fatalf("chunk %s: status %d, Range %q", cr, r.status, r.header.Get("Range"))
				}
				q := do(t, srv, "PUT", loc, nil, "Content-Range", "bytes */*")
				if q.status != http.StatusPermanentRedirect || q.header.Get("Range") != fmt.Sprintf("bytes=0-%d", end-1) {
					t.Fatalf("status query: %d, Range %q", q.status, q.header.Get("Range"))
				}
				off = end
			}
			media(t, srv, name, data)
			// A retried completion, or a status query, gets the object.
			r := do(t, srv, "PUT", loc, nil, "Content-Range", "bytes */*")
			var o jsonObject
			r.decode(t, &o)
			checkResource(t, o, name, data)
		})
	}
}

// multipartBody builds a multipart/related upload body.
func multipartBody(t *testing.T, meta, mediaType string, data []byte) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	h := textproto.MIMEHeader{}
	h.Set("Content-Type", "application/json; charset=UTF-8")
	w, _ := mw.CreatePart(h)
	io.WriteString(w, meta)
	h = textproto.MIMEHeader{}
	h.Set("Content-Type", mediaType)
	w, _ = mw.CreatePart(h)
	w.Write(data)
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), "multipart/related; boundary=" + mw.Boundary()
}

// startSession opens a resumable session and returns its URI.
func startSession(t *testing.T, srv *fakes.Server, name, meta string, query ...string) string {
	t.Helper()
	var body []byte
	if meta != "" {
		body = []byte(meta)
	}
	r := do(t, srv, "POST", uploadPath("resumable", name, query...), body, "Content-Type", "application/json")
	loc := r.header.Get("Location")
	if r.status != http.StatusOK || !strings.HasPrefix(loc, srv.HTTPURL()+"/upload/storage/v1/b/"+bucket+"/o?") || !strings.Contains(loc, "upload_id=") {
		t.Fatalf("session start: status %d, Location %q, body %q", r.status, loc, r.body)
	}
	return loc
}

func TestJSONResumableEdgeCases(t *testing.T) {
	srv, _ := start(t)
	data := payload(mib+5, 40)
	q := 256 << 10

	t.Run("retried chunk overlaps", func(t *testing.T) {
		loc := startSession(t, srv, "overlap", "")
		do(t, srv, "PUT", loc, data[:2*q], "Content-Range", fmt.Sprintf("bytes 0-%d/*", 2*q-1))
		// The client did not see the answer and sends from byte q again.
		r := do(t, srv, "PUT", loc, data[q:3*q], "Content-Range", fmt.Sprintf("bytes %d-%d/*", q, 3*q-1))
		if r.status != http.StatusPermanentRedirect || r.header.Get("Range") != fmt.Sprintf("bytes=0-%d", 3*q-1) {
			t.Fatalf("status %d, Range %q", r.status, r.header.Get("Range"))
		}
		r = do(t, srv, "PUT", loc, data[3*q:], "Content-Range", fmt.Sprintf("bytes %d-%d/%d", 3*q, len(data)-1, len(data)))
		var o jsonObject
		r.decode(t, &o)
		checkResource(t, o, "overlap", data)
		media(t, srv, "overlap", data)
	})
	t.Run("gap is refused", func(t *testing.T) {
		loc := startSession(t, srv, "gap", "")
		r := do(t, srv, "PUT", loc, data[q:2*q], "Content-Range", fmt.Sprintf("bytes %d-%d/*", q, 2*q-1))
		r.errorReason(t, http.StatusBadRequest)
	})
	t.Run("X-GUploader-No-308", func(t *testing.T) {
		loc := startSession(t, srv, "no308", "")
		r := do(t, srv, "POST", loc, data[:q], "Content-Range", fmt.Sprintf("bytes 0-%d/*", q-1), "X-GUploader-No-308", "yes")
		if r.status != http.StatusOK || r.header.Get("X-Http-Status-Code-Override") != "308" || r.header.Get("Range") != fmt.Sprintf("bytes=0-%d", q-1) {
			t.Fatalf("status %d, headers %v", r.status, r.header)
		}
	})
	t.Run("empty session status has no Range", func(t *testing.T) {
		loc := startSession(t, srv, "empty-status", "")
		r := do(t, srv, "PUT", loc, nil, "Content-Range", "bytes */*")
		if r.status != http.StatusPermanentRedirect || r.header.Get("Range") != "" {
			t.Fatalf("status %d, Range %q", r.status, r.header.Get("Range"))
		}
	})
	t.Run("final checksum header", func(t *testing.T) {
		for _, tc := range []struct {
			hash string
			ok   bool
		}{{"crc32c=" + b64CRC(data), true}, {"crc32c=AAAAAA==", false}, {"crc32c=" + b64CRC(data) + ",md5=" + b64MD5(data), true}, {"md5=" + b64MD5(nil), false}} {
			name := "hash/" + tc.hash
			loc := startSession(t, srv, name, "")
			r := do(t, srv, "PUT", loc, data, "Content-Range", fmt.Sprintf("bytes 0-%d/%d", len(data)-1, len(data)), "X-Goog-Hash", tc.hash)
			if tc.ok {
				var o jsonObject
				r.decode(t, &o)
				checkResource(t, o, name, data)
				media(t, srv, name, data)
				continue
			}
			r.errorReason(t, http.StatusBadRequest)
			absent(t, dial(t, srv), name)
			// The session is gone.
			do(t, srv, "PUT", loc, nil, "Content-Range", "bytes */*").errorReason(t, http.StatusNotFound)
		}
	})
	t.Run("declared size", func(t *testing.T) {
		r := do(t, srv, "POST", uploadPath("resumable", "sized"), nil, "X-Upload-Content-Length", "10")
		loc := r.header.Get("Location")
		do(t, srv, "PUT", loc, data[:11], "Content-Range", "bytes 0-10/11").errorReason(t, http.StatusBadRequest)
	})
	t.Run("cancel", func(t *testing.T) {
		loc := startSession(t, srv, "cancelled", "")
		do(t, srv, "PUT", loc, data[:q], "Content-Range", fmt.Sprintf("bytes 0-%d/*", q-1))
		if r := do(t, srv, "DELETE", loc, nil); r.status != 499 {
			t.Fatalf("cancel: status %d %q", r.status, r.body)
		}
		do(t, srv, "PUT", loc, nil, "Content-Range", "bytes */*").errorReason(t, 499) // as GCS answers a cancelled session
		absent(t, dial(t, srv), "cancelled")
	})
	t.Run("precondition at start", func(t *testing.T) {
		do(t, srv, "POST", uploadPath("media", "exists"), []byte("x"))
		r := do(t, srv, "POST", uploadPath("resumable", "exists", "ifGenerationMatch=0"), nil)
		if reason, _ := r.errorReason(t, http.StatusPreconditionFailed); reason != "conditionNotMet" {
			t.Fatalf("reason %q", reason)
		}
	})
	t.Run("bad Content-Range", func(t *testing.T) {
		loc := startSession(t, srv, "bad-range", "")
		for _, cr := range []string{"bytes 5-1/*", "bytes x-y/*", "items 0-1/2", "bytes 0-9/5"} {
			do(t, srv, "PUT", loc, make([]byte, 2), "Content-Range", cr).errorReason(t, http.StatusBadRequest)
		}
	})
}

func TestJSONUploadRejects(t *testing.T) {
	srv, cc := start(t)
	data := []byte("some content")
	body, ctype := multipartBody(t, `{"name":"bad-crc","crc32c":"AAAAAA=="}`, "text/plain", data)
	for _, tc := range []struct {
		name   string
		path   string
		body   []byte
		hdr    []string
		status int
		reason string
	}{
		{"no uploadType", "/upload/storage/v1/b/" + bucket + "/o?name=x", data, nil, 400, "invalid"},
		{"no name", uploadPath("media", ""), data, nil, 400, "invalid"},
		{"bad name", uploadPath("media", ".."), data, nil, 400, "invalid"},
		{"no bucket", "/upload/storage/v1/b/nope/o?uploadType=media&name=x", data, nil, 404, "notFound"},
		{"crc32c mismatch", uploadPath("multipart", ""), body, []string{"Content-Type", ctype}, 400, "invalid"},
		{"not multipart", uploadPath("multipart", "x"), data, []string{"Content-Type", "text/plain"}, 400, "invalid"},
		{"bad precondition value", uploadPath("media", "x", "ifGenerationMatch=abc"), data, nil, 400, "invalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, srv, "POST", tc.path, tc.body, tc.hdr...)
			if reason, _ := r.errorReason(t, tc.status); reason != tc.reason {
				t.Fatalf("reason %q, want %q", reason, tc.reason)
			}
		})
	}
	absent(t, cc, "bad-crc")
	absent(t, cc, "x")
	// The same upload with the right checksum goes through.
	body, ctype = multipartBody(t, `{"name":"bad-crc","crc32c":"`+b64CRC(data)+`"}`, "text/plain", data)
	do(t, srv, "POST", uploadPath("multipart", ""), body, "Content-Type", ctype)
	media(t, srv, "bad-crc", data)
}

func TestJSONRangeReads(t *testing.T) {
	srv, _ := start(t)
	const size = 3*mib + 11
	data := payload(size, 41)
	// Written over gRPC in 1 MiB messages, so ranges cross stored parts.
	put(t, dial(t, srv), "big", slices.Clone(data))
	put(t, dial(t, srv), "empty", nil)
	for _, tc := range []struct {
		name, object, rng string
		status            int
		start, end        int // expected content
	}{
		{"whole", "big", "", 200, 0, size},
		{"range", "big", "bytes=100-2097251", 206, 100, 2097252},
		{"open end", "big", "bytes=3145000-", 206, 3145000, size},
		{"past the end", "big", "bytes=3145000-99999999", 206, 3145000, size},
		{"suffix", "big", "bytes=-7", 206, size - 7, size},
		{"suffix longer than the object", "big", "bytes=-99999999", 206, 0, size},
		{"unsatisfiable", "big", fmt.Sprintf("bytes=%d-", size), 416, 0, 0},
		{"several ranges are ignored", "big", "bytes=0-1,5-6", 200, 0, size},
		{"malformed is ignored", "big", "bytes=a-b", 200, 0, size},
		{"empty object", "empty", "", 200, 0, 0},
		{"empty object from 0", "empty", "bytes=0-", 200, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{objPath(tc.object) + "?alt=media", "/download/storage/v1/b/" + bucket + "/o/" + tc.object, "/" + bucket + "/" + tc.object} {
				var hdr []string
				if tc.rng != "" {
					hdr = []string{"Range", tc.rng}
				}
				r := do(t, srv, "GET", path, nil, hdr...)
				if r.status != tc.status {
					t.Fatalf("%s: status %d, want %d (%q)", path, r.status, tc.status, r.body)
				}
				full := data
				if tc.object == "empty" {
					full = nil
				}
				if tc.status == 416 {
					if cr := r.header.Get("Content-Range"); cr != fmt.Sprintf("bytes */%d", size) {
						t.Fatalf("Content-Range %q", cr)
					}
					continue
				}
				sameBytes(t, path, r.body, full[tc.start:tc.end])
				if tc.status == 206 {
					if cr := r.header.Get("Content-Range"); cr != fmt.Sprintf("bytes %d-%d/%d", tc.start, tc.end-1, size) {
						t.Fatalf("Content-Range %q", cr)
					}
				}
				hashes := r.header.Values("X-Goog-Hash")
				want := []string{"crc32c=" + b64CRC(full) + ",md5=" + b64MD5(full)}
				if strings.HasPrefix(path, "/"+bucket) { // XML: one header per hash
					want = []string{"crc32c=" + b64CRC(full), "md5=" + b64MD5(full)}
				}
				if !slices.Equal(hashes, want) {
					t.Fatalf("%s: x-goog-hash %q, want %q", path, hashes, want)
				}
			}
		})
	}
	// HEAD on the XML path: headers, no body.
	r := do(t, srv, "HEAD", "/"+bucket+"/big", nil)
	if r.status != 200 || len(r.body) != 0 || r.header.Get("Content-Length") != strconv.Itoa(size) {
		t.Fatalf("HEAD: %d, %d bytes, %v", r.status, len(r.body), r.header)
	}
}

func TestJSONGenerationsAndPreconditions(t *testing.T) {
	srv, _ := start(t)
	var v1, v2 jsonObject
	do(t, srv, "POST", uploadPath("media", "g"), []byte("one")).decode(t, &v1)
	do(t, srv, "POST", uploadPath("media", "g"), []byte("two")).decode(t, &v2)
	g1, _ := strconv.ParseInt(v1.Generation, 10, 64)
	g2, _ := strconv.ParseInt(v2.Generation, 10, 64)
	if g2 <= g1 {
		t.Fatalf("generations %d then %d", g1, g2)
	}
	for _, tc := range []struct {
		name   string
		method string
		path   string
		body   []byte
		status int
	}{
		{"get generation match", "GET", objPath("g") + "?ifGenerationMatch=" + v2.Generation, nil, 200},
		{"get generation mismatch", "GET", objPath("g") + "?ifGenerationMatch=" + v1.Generation, nil, 412},
		{"get generation not match", "GET", objPath("g") + "?ifGenerationNotMatch=" + v2.Generation, nil, 304},
		{"get metageneration not match", "GET", objPath("g") + "?alt=media&ifMetagenerationNotMatch=1", nil, 304},
		{"get metageneration match", "GET", objPath("g") + "?ifMetagenerationMatch=2", nil, 412},
		{"old generation is gone", "GET", objPath("g") + "?generation=" + v1.Generation, nil, 404},
		{"current generation", "GET", objPath("g") + "?alt=media&generation=" + v2.Generation, nil, 200},
		{"insert does-not-exist", "POST", uploadPath("media", "g", "ifGenerationMatch=0"), []byte("x"), 412},
		{"insert generation not match, no object", "POST", uploadPath("media", "new", "ifGenerationNotMatch=5"), []byte("x"), 304},
		{"insert generation match", "POST", uploadPath("media", "g", "ifGenerationMatch="+v2.Generation), []byte("three"), 200},
		{"delete generation mismatch", "DELETE", objPath("g") + "?ifGenerationMatch=" + v2.Generation, nil, 412},
		{"delete missing", "DELETE", objPath("missing"), nil, 404},
		{"get missing", "GET", objPath("missing"), nil, 404},
		{"get missing bucket", "GET", "/storage/v1/b/nope/o/x", nil, 404},
		{"get bad generation", "GET", objPath("g") + "?generation=x", nil, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, srv, tc.method, tc.path, tc.body)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %q", r.status, tc.status, r.body)
			}
			if tc.status == 304 && len(r.body) != 0 {
				t.Fatalf("304 with a body %q", r.body)
			}
			if tc.status >= 400 {
				r.errorReason(t, tc.status)
			}
		})
	}
	media(t, srv, "g", []byte("three"))
	absent(t, dial(t, srv), "new")
}

func TestJSONPatchAndUpdate(t *testing.T) {
	srv, cc := start(t)
	var o jsonObject
	body, ctype := multipartBody(t, `{"name":"p","metadata":{"a":"1","b":"2"},"contentType":"text/plain","cacheControl":"no-cache"}`, "text/plain", []byte("data"))
	do(t, srv, "POST", uploadPath("multipart", ""), body, "Content-Type", ctype).decode(t, &o)

	var p jsonObject
	r := do(t, srv, "PATCH", objPath("p")+"?ifMetagenerationMatch=1", []byte(`{"metadata":{"a":null,"c":"3"},"contentType":"text/html","customTime":"2030-01-02T03:04:05.000Z"}`))
	r.decode(t, &p)
	if p.Metageneration != "2" || p.Generation != o.Generation || p.ContentType != "text/html" || p.CacheControl != "no-cache" ||
		fmt.Sprint(p.Metadata) != "map[b:2 c:3]" || p.CustomTime != "2030-01-02T03:04:05.000Z" || p.Etag == o.Etag {
		t.Fatalf("after patch %+v", p)
	}
	// A second patch with the old metageneration fails.
	do(t, srv, "PATCH", objPath("p")+"?ifMetagenerationMatch=1", []byte(`{}`)).errorReason(t, 412)
	// customTime cannot move back or go away.
	do(t, srv, "PATCH", objPath("p"), []byte(`{"customTime":"2020-01-01T00:00:00Z"}`)).errorReason(t, 400)
	do(t, srv, "PATCH", objPath("p"), []byte(`{"customTime":null}`)).errorReason(t, 400)
	// Update replaces the writable metadata: what is absent is cleared.
	var u jsonObject
	do(t, srv, "PUT", objPath("p"), []byte(`{"metadata":{"z":"9"},"customTime":"2030-01-02T03:04:05Z"}`)).decode(t, &u)
	if u.Metageneration != "3" || u.ContentType != "" || u.CacheControl != "" || fmt.Sprint(u.Metadata) != "map[z:9]" {
		t.Fatalf("after update %+v", u)
	}
	// metadata: null clears it all; the content never changes.
	var c jsonObject
	do(t, srv, "PATCH", objPath("p"), []byte(`{"metadata":null}`)).decode(t, &c)
	if c.Metadata != nil || c.Metageneration != "4" {
		t.Fatalf("after clearing %+v", c)
	}
	media(t, srv, "p", []byte("data"))
	obj := mustGet(t, cc, "p")
	if obj.GetMetageneration() != 4 {
		t.Fatalf("over gRPC: %v", obj)
	}
	// The gRPC preconditions see the metageneration too.
	four := int64(4)
	if _, err := getObject(ctxT(t), cc, &wire.GetObjectRequest{Bucket: bucketRes, Object: "p", IfMetagenerationNotMatch: &four}); err == nil {
		t.Fatal("if_metageneration_not_match=4 passed")
	}
	do(t, srv, "PATCH", objPath("missing"), []byte(`{}`)).errorReason(t, 404)
	do(t, srv, "PATCH", objPath("p"), []byte(`not json`)).errorReason(t, 400)
	if reason, msg := do(t, srv, "PATCH", objPath("p"), []byte(`{"kmsKeyName":"k"}`)).errorReason(t, 501); reason != "notImplemented" || !strings.Contains(msg, "kmsKeyName") {
		t.Fatalf("KMS key: %s %s", reason, msg)
	}
}

func TestJSONList(t *testing.T) {
	srv, _ := start(t)
	names := []string{"a", "b/", "b/1", "b/2", "b/c/3", "c", "d/4", "e"}
	for _, n := range names {
		do(t, srv, "POST", uploadPath("media", n), []byte(n))
	}
	type page struct{ items, prefixes []string }
	list := func(t *testing.T, query string) []page {
		t.Helper()
		var pages []page
		token := ""
		for range 20 {
			q := query
			if token != "" {
				q += "&pageToken=" + url.QueryEscape(token)
			}
			var l jsonList
			r := do(t, srv, "GET", "/storage/v1/b/"+bucket+"/o?"+q, nil)
			r.decode(t, &l)
			if l.Kind != "storage#objects" {
				t.Fatalf("kind %q", l.Kind)
			}
			var p page
			for _, o := range l.Items {
				p.items = append(p.items, o.Name)
				checkResource(t, o, o.Name, []byte(strings.TrimSuffix(o.Name, "#")))
			}
			p.prefixes = l.Prefixes
			pages = append(pages, p)
			if token = l.NextPageToken; token == "" {
				return pages
			}
		}
		t.Fatal("too many pages")
		return nil
	}
	for _, tc := range []struct {
		query string
		want  []page
	}{
		{"", []page{{items: []string{"a", "b/", "b/1", "b/2", "b/c/3", "c", "d/4", "e"}}}},
		{"prefix=b/", []page{{items: []string{"b/", "b/1", "b/2", "b/c/3"}}}},
		{"delimiter=/", []page{{items: []string{"a", "c", "e"}, prefixes: []string{"b/", "d/"}}}},
		{"prefix=b/&delimiter=/", []page{{items: []string{"b/", "b/1", "b/2"}, prefixes: []string{"b/c/"}}}},
		{"delimiter=/&includeTrailingDelimiter=true", []page{{items: []string{"a", "b/", "c", "e"}, prefixes: []string{"b/", "d/"}}}},
		{"maxResults=3", []page{{items: []string{"a", "b/", "b/1"}}, {items: []string{"b/2", "b/c/3", "c"}}, {items: []string{"d/4", "e"}}}},
		{"maxResults=2&delimiter=/", []page{{items: []string{"a"}, prefixes: []string{"b/"}}, {items: []string{"c"}, prefixes: []string{"d/"}}, {items: []string{"e"}}}},
		{"startOffset=b/2&endOffset=d", []page{{items: []string{"b/2", "b/c/3", "c"}}}},
		{"prefix=zzz", []page{{}}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			if got := list(t, tc.query); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		query  string
		status int
	}{
		{"pageToken=!!", 400},
		{"maxResults=-1", 400},
		{"matchGlob=*", 501},
		{"versions=maybe", 400},
	} {
		do(t, srv, "GET", "/storage/v1/b/"+bucket+"/o?"+tc.query, nil).errorReason(t, tc.status)
	}
	do(t, srv, "GET", "/storage/v1/b/nope/o", nil).errorReason(t, 404)
	for _, n := range names {
		media(t, srv, n, []byte(n))
	}
}

func TestJSONBucketsAndVersions(t *testing.T) {
	srv := fakes.NewTest(t)
	do(t, srv, "POST", "/storage/v1/b", []byte(`{"name":"v-bucket"}`)).errorReason(t, 400) // no project
	var b struct {
		Kind, Name string
		Versioning struct{ Enabled bool }
	}
	do(t, srv, "POST", "/storage/v1/b?project=p", []byte(`{"name":"v-bucket","versioning":{"enabled":true}}`)).decode(t, &b)
	if b.Kind != "storage#bucket" || b.Name != "v-bucket" || !b.Versioning.Enabled {
		t.Fatalf("bucket %+v", b)
	}
	do(t, srv, "POST", "/storage/v1/b?project=p", []byte(`{"name":"v-bucket"}`)).errorReason(t, 409)
	do(t, srv, "POST", "/storage/v1/b?project=p", []byte(`{"name":"Bad"}`)).errorReason(t, 400)
	do(t, srv, "POST", "/storage/v1/b?project=p", []byte(`{"name":"plain"}`))
	var l struct{ Items []struct{ Name string } }
	do(t, srv, "GET", "/storage/v1/b?project=p", nil).decode(t, &l)
	if fmt.Sprint(l.Items) != "[{plain} {v-bucket}]" {
		t.Fatalf("buckets %v", l.Items)
	}
	do(t, srv, "GET", "/storage/v1/b/plain", nil).decode(t, &b)
	do(t, srv, "GET", "/storage/v1/b/nope", nil).errorReason(t, 404)

	// In a versioned bucket, overwritten and deleted objects stay as
	// noncurrent versions.
	up := func(name, data string) jsonObject {
		var o jsonObject
		do(t, srv, "POST", "/upload/storage/v1/b/v-bucket/o?uploadType=media&name="+name, []byte(data)).decode(t, &o)
		return o
	}
	v1, v2 := up("o", "one"), up("o", "two")
	up("p", "p")
	if r := do(t, srv, "GET", "/storage/v1/b/v-bucket/o/o?alt=media&generation="+v1.Generation, nil); string(r.body) != "one" {
		t.Fatalf("old generation: %d %q", r.status, r.body)
	}
	if r := do(t, srv, "DELETE", "/storage/v1/b/v-bucket/o/o", nil); r.status != 204 {
		t.Fatalf("delete: %d %q", r.status, r.body)
	}
	do(t, srv, "GET", "/storage/v1/b/v-bucket/o/o", nil).errorReason(t, 404)
	var vl jsonList
	do(t, srv, "GET", "/storage/v1/b/v-bucket/o?versions=true", nil).decode(t, &vl)
	var got []string
	for _, o := range vl.Items {
		got = append(got, o.Name+"#"+o.Generation+"/"+strconv.FormatBool(o.TimeDeleted != ""))
	}
	want := []string{"o#" + v1.Generation + "/true", "o#" + v2.Generation + "/true", "p#" + strings.Split(got[2], "#")[1]}
	if fmt.Sprint(got) != fmt.Sprint(want) || !strings.HasSuffix(got[2], "/false") {
		t.Fatalf("versions %v, want %v", got, want)
	}
	do(t, srv, "GET", "/storage/v1/b/v-bucket/o", nil).decode(t, &vl)
	if len(vl.Items) != 1 || vl.Items[0].Name != "p" {
		t.Fatalf("live objects %+v", vl.Items)
	}
	// Pages of one, across the generations.
	var pages []string
	token := ""
	for range 10 {
		var pl jsonList
		do(t, srv, "GET", "/storage/v1/b/v-bucket/o?versions=true&maxResults=1&pageToken="+url.QueryEscape(token), nil).decode(t, &pl)
		for _, o := range pl.Items {
			pages = append(pages, o.Name+"#"+o.Generation)
		}
		if token = pl.NextPageToken; token == "" {
			break
		}
	}
	if len(pages) != 3 || pages[0] != "o#"+v1.Generation || pages[1] != "o#"+v2.Generation {
		t.Fatalf("paged versions %v", pages)
	}

	// A bucket with objects cannot be deleted; an empty one can.
	do(t, srv, "DELETE", "/storage/v1/b/v-bucket", nil).errorReason(t, 409)
	for _, g := range []string{v1.Generation, v2.Generation} {
		if r := do(t, srv, "DELETE", "/storage/v1/b/v-bucket/o/o?generation="+g, nil); r.status != 204 {
			t.Fatalf("delete generation %s: %d", g, r.status)
		}
	}
	var p jsonObject
	do(t, srv, "GET", "/storage/v1/b/v-bucket/o/p", nil).decode(t, &p)
	do(t, srv, "DELETE", "/storage/v1/b/v-bucket/o/p", nil)
	do(t, srv, "DELETE", "/storage/v1/b/v-bucket", nil).errorReason(t, 409) // p is noncurrent
	do(t, srv, "DELETE", "/storage/v1/b/v-bucket/o/p?generation="+p.Generation, nil)
	if r := do(t, srv, "DELETE", "/storage/v1/b/v-bucket", nil); r.status != 204 {
		t.Fatalf("delete bucket: %d %q", r.status, r.body)
	}
	do(t, srv, "GET", "/storage/v1/b/v-bucket", nil).errorReason(t, 404)
	do(t, srv, "POST", "/upload/storage/v1/b/v-bucket/o?uploadType=media&name=x", []byte("x")).errorReason(t, 404)
}

func TestJSONUnimplemented(t *testing.T) {
	srv, _ := start(t)
	do(t, srv, "POST", uploadPath("media", "src"), []byte("x"))
	for _, tc := range []struct {
		method, path, names string
	}{
		{"POST", objPath("src") + "/restore?generation=1", "objects.restore"},
		{"POST", objPath("src") + "/moveTo/o/dst", "objects.move"},
		{"GET", "/storage/v1/b/" + bucket + "/managedFolders/m", "managedFolders"},
		{"GET", "/storage/v1/projects/p/other", "GET projects"},
		{"POST", "/batch/storage/v1", "batch"},
		{"POST", "/storage/v1/b/" + bucket + "/o/watch", "objects.watchAll"},
		{"GET", "/storage/v1/b/" + bucket + "/o?softDeleted=true", "softDeleted"},
		{"GET", objPath("src") + "?softDeleted=true", "soft-deleted"},
	} {
		t.Run(tc.names, func(t *testing.T) {
			reason, msg := do(t, srv, tc.method, tc.path, nil).errorReason(t, 501)
			if reason != "notImplemented" || !strings.Contains(msg, tc.names) {
				t.Fatalf("reason %q, message %q; want it to name %s", reason, msg, tc.names)
			}
		})
	}
	// The XML API answers in XML.
	r := do(t, srv, "DELETE", "/"+bucket+"/src", nil)
	if r.status != 501 || !bytes.Contains(r.body, []byte("<Code>NotImplemented</Code>")) {
		t.Fatalf("XML DELETE: %d %q", r.status, r.body)
	}
	r = do(t, srv, "GET", "/"+bucket+"/missing", nil)
	if r.status != 404 || !bytes.Contains(r.body, []byte("<Code>NoSuchKey</Code>")) {
		t.Fatalf("XML GET of a missing object: %d %q", r.status, r.body)
	}
	media(t, srv, "src", []byte("x"))
	absent(t, dial(t, srv), "dst")
}

func TestJSONCallLogAndStats(t *testing.T) {
	srv, cc := start(t)
	tenant := []string{"X-Scope-OrgID", "first", "X-Scope-OrgID", "t-json"}
	do(t, srv, "POST", uploadPath("media", "a"), []byte("abc"), tenant...)
	do(t, srv, "GET", objPath("a")+"?alt=media", nil, tenant...)
	do(t, srv, "GET", objPath("missing"), nil)
	do(t, srv, "GET", "/"+bucket+"/a", nil, tenant...)
	do(t, srv, "GET", "/storage/v1/b/"+bucket+"/o", nil)
	do(t, srv, "DELETE", objPath("a"), nil, tenant...)
	body, ctype := multipartBody(t, `{"name":"named-in-metadata"}`, "text/plain", []byte("m"))
	do(t, srv, "POST", uploadPath("multipart", ""), body, "Content-Type", ctype)
	want := []fakes.Call{
		{Method: "objects.insert", Tenant: "t-json", Bucket: bucket, Object: "a", Code: codes.OK},
		{Method: "objects.get", Tenant: "t-json", Bucket: bucket, Object: "a", Code: codes.OK},
		{Method: "objects.get", Bucket: bucket, Object: "missing", Code: codes.NotFound},
		{Method: "xml.objects.get", Tenant: "t-json", Bucket: bucket, Object: "a", Code: codes.OK},
		{Method: "objects.list", Bucket: bucket, Code: codes.OK},
		{Method: "objects.delete", Tenant: "t-json", Bucket: bucket, Object: "a", Code: codes.OK},
		{Method: "objects.insert", Bucket: bucket, Object: "named-in-metadata", Code: codes.OK},
	}
	if got := srv.Calls(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("calls\n got %v\nwant %v", got, want)
	}

	// The stats document: usage by tenant and the counters.
	put(t, cc, "kept", []byte("12345"))
	do(t, srv, "POST", uploadPath("media", "b"), []byte("xy"), tenant...)
	var st struct {
		Tenants []struct {
			Tenant         string
			Objects, Bytes int64
		}
		Calls []struct {
			Method, Tenant, Code string
			Count                int64
		}
	}
	do(t, srv, "GET", "/_objup/stats", nil).decode(t, &st)
	if fmt.Sprint(st.Tenants) != "[{ 2 6} {t-json 1 2}]" {
		t.Fatalf("tenants %v", st.Tenants)
	}
	counts := map[string]int64{}
	for _, c := range st.Calls {
		counts[c.Method+"/"+c.Tenant+"/"+c.Code] = c.Count
	}
	if counts["objects.insert/t-json/OK"] != 2 || counts["objects.get//NotFound"] != 1 || counts["WriteObject//OK"] != 1 {
		t.Fatalf("counts %v", counts)
	}
	if len(srv.Calls()) != 9 {
		t.Fatalf("the stats request was logged: %v", srv.Calls())
	}
	media(t, srv, "b", []byte("xy"))
}
