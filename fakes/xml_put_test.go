package fakes_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/objup/objup/fakes"
)

// TestXMLPut: the XML API's simple upload stores the body with the
// attributes of its headers, checks the digests it declares and its
// preconditions, and answers with the object's headers; a refused PUT
// stores nothing.
func TestXMLPut(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket(bucket))
	body := payload(300<<10+7, 61)
	for _, tc := range []struct {
		name   string
		object string
		body   []byte
		hdr    []string
		st     int
		code   string // the XML error code of a refusal
	}{
		{name: "plain", object: "plain", body: body, st: 200},
		{name: "empty", object: "empty", body: []byte{}, st: 200},
		{name: "attributes", object: "attrs", body: body, st: 200, hdr: []string{
			"Content-Type", "text/plain", "Cache-Control", "no-cache", "Content-Disposition", "attachment",
			"Content-Language", "fr", "Content-Encoding", "identity", "X-Goog-Storage-Class", "nearline",
			"X-Goog-Meta-Color", "blue", "x-goog-meta-Shape", "round"}},
		{name: "digests", object: "digests", body: body, st: 200, hdr: []string{
			"Content-MD5", b64MD5(body), "X-Goog-Hash", "crc32c=" + b64CRC(body), "X-Goog-Hash", "md5=" + b64MD5(body)}},
		{name: "digests in one header", object: "digests1", body: body, st: 200, hdr: []string{
			"X-Goog-Hash", "crc32c=" + b64CRC(body) + ",md5=" + b64MD5(body)}},
		{name: "bad Content-MD5", object: "bad-md5", body: body, st: 400, code: "BadDigest", hdr: []string{"Content-MD5", b64MD5(body[1:])}},
		{name: "bad crc32c", object: "bad-crc", body: body, st: 400, code: "BadDigest", hdr: []string{"X-Goog-Hash", "crc32c=" + b64CRC(body[1:])}},
		{name: "bad md5 in x-goog-hash", object: "bad-md5h", body: body, st: 400, code: "BadDigest", hdr: []string{"X-Goog-Hash", "md5=" + b64MD5(nil)}},
		{name: "malformed Content-MD5", object: "inv-md5", body: body, st: 400, code: "InvalidDigest", hdr: []string{"Content-MD5", "xyz"}},
		{name: "malformed crc32c", object: "inv-crc", body: body, st: 400, code: "InvalidDigest", hdr: []string{"X-Goog-Hash", "crc32c=AAAA"}},
		{name: "generation 0 on a new name", object: "gen0", body: body, st: 200, hdr: []string{"X-Goog-If-Generation-Match", "0"}},
		{name: "generation 0 on an existing name", object: "plain", body: body, st: 412, code: "PreconditionFailed", hdr: []string{"X-Goog-If-Generation-Match", "0"}},
		{name: "metageneration on a missing object", object: "meta", body: body, st: 412, code: "PreconditionFailed", hdr: []string{"X-Goog-If-Metageneration-Match", "1"}},
		{name: "bad name", object: ".", body: body, st: 400, code: "InvalidArgument"},
		{name: "encryption key", object: "csek", body: body, st: 501, code: "NotImplemented", hdr: []string{"X-Goog-Encryption-Key", "a2V5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, srv, "PUT", xmlPath(tc.object, ""), tc.body, tc.hdr...)
			if tc.st != 200 {
				wantXMLError(t, "PUT", r, tc.st, tc.code)
				if tc.st != 412 {
					if got := readXML(t, srv, tc.object); got.status == 200 {
						t.Fatalf("refused PUT stored %s: %d", tc.object, got.status)
					}
				}
				return
			}
			if r.status != 200 || r.header.Get("ETag") != hexETag(tc.body) || r.header.Get("X-Goog-Generation") == "" ||
				r.header.Get("X-Goog-Metageneration") != "1" || r.header.Get("X-Goog-Stored-Content-Length") != strconv.Itoa(len(tc.body)) ||
				strings.Join(r.header.Values("X-Goog-Hash"), ",") != "crc32c="+b64CRC(tc.body)+",md5="+b64MD5(tc.body) {
				t.Fatalf("PUT: %d %s %v", r.status, r.body, r.header)
			}
			got := readXML(t, srv, tc.object)
			sameBytes(t, "read back", got.body, tc.body)
			if got.header.Get("X-Goog-Generation") != r.header.Get("X-Goog-Generation") {
				t.Fatalf("read generation %s, PUT answered %s", got.header.Get("X-Goog-Generation"), r.header.Get("X-Goog-Generation"))
			}
			media(t, srv, tc.object, tc.body)
			if tc.name == "attributes" {
				var o jsonObject
				do(t, srv, "GET", objPath(tc.object), nil).decode(t, &o)
				if o.ContentType != "text/plain" || o.CacheControl != "no-cache" || o.StorageClass != "NEARLINE" ||
					o.Metadata["color"] != "blue" || o.Metadata["shape"] != "round" || len(o.Metadata) != 2 {
					t.Fatalf("attributes %+v", o)
				}
			}
		})
	}
	t.Run("no bucket", func(t *testing.T) {
		wantXMLError(t, "PUT", do(t, srv, "PUT", "/no-such-bucket/x", body), 404, "NoSuchBucket")
	})
	t.Run("overwrite", func(t *testing.T) {
		r := do(t, srv, "PUT", xmlPath("plain", ""), body[:10])
		if r.status != 200 || r.header.Get("X-Goog-Generation") == "" {
			t.Fatalf("overwrite: %d %s", r.status, r.body)
		}
		sameBytes(t, "overwritten", readXML(t, srv, "plain").body, body[:10])
	})
	var methods []string
	for _, c := range srv.Calls() {
		if !strings.HasPrefix(c.Method, "xml.") && !strings.HasPrefix(c.Method, "objects.") {
			t.Errorf("call logged as %q", c.Method)
		}
		methods = append(methods, c.Method)
	}
	if !strings.Contains(strings.Join(methods, " "), "xml.objects.put") {
		t.Errorf("calls %v", methods)
	}
}
