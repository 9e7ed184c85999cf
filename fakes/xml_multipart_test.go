package fakes_test

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/objup/objup/fakes"
)

// TestXMLMultipart runs multipart uploads through every call: parts sent
// out of order and one sent again, their lists, the bucket's uploads, the
// complete (one object of the listed parts in order, with a CRC32C and no
// MD5, the initiate's attributes and the headers of the answer), and an
// abort; none is left in progress, and the log names each call.
func TestXMLMultipart(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket(bucket))
	p1, p2, p3 := payload(5*mib, 71), payload(5*mib+3, 72), payload(1234, 73)
	srv.ResetCalls()

	id := initiate(t, srv, "dir/big", "Content-Type", "application/x-test", "Cache-Control", "private",
		"X-Goog-Meta-Owner", "objup", "X-Goog-Storage-Class", "COLDLINE")
	e3 := mustPart(t, srv, "dir/big", id, 3, p3)
	mustPart(t, srv, "dir/big", id, 2, p1) // replaced below
	e1 := mustPart(t, srv, "dir/big", id, 1, p1, "Content-MD5", b64MD5(p1), "X-Goog-Hash", "crc32c="+b64CRC(p1))
	e2 := mustPart(t, srv, "dir/big", id, 2, p2)
	mustPart(t, srv, "dir/big", id, 9, p3) // not listed: dropped

	// The parts, two a page.
	var pages []string
	marker := ""
	for {
		q := "uploadId=" + id + "&max-parts=2"
		if marker != "" {
			q += "&part-number-marker=" + marker
		}
		r := do(t, srv, "GET", xmlPath("dir/big", q), nil)
		var res struct {
			Parts []struct {
				PartNumber   int
				LastModified string
				ETag         string
				Size         int64
			} `xml:"Part"`
			IsTruncated          bool
			NextPartNumberMarker string
			MaxParts             int
		}
		if r.status != 200 || xml.Unmarshal(r.body, &res) != nil || res.MaxParts != 2 {
			t.Fatalf("list parts: %d %s", r.status, r.body)
		}
		var page []string
		for _, p := range res.Parts {
			if !strings.HasSuffix(p.LastModified, "Z") {
				t.Fatalf("LastModified %q", p.LastModified)
			}
			page = append(page, fmt.Sprintf("%d:%d:%s", p.PartNumber, p.Size, p.ETag))
		}
		pages = append(pages, strings.Join(page, " "))
		if !res.IsTruncated {
			break
		}
		marker = res.NextPartNumberMarker
	}
	want := []string{fmt.Sprintf("1:%d:%s 2:%d:%s", len(p1), e1, len(p2), e2), fmt.Sprintf("3:%d:%s 9:%d:%s", len(p3), e3, len(p3), e3)}
	if !slices.Equal(pages, want) {
		t.Fatalf("parts %q, want %q", pages, want)
	}

	// Other uploads, and the bucket's, one a page.
	id2 := initiate(t, srv, "dir/big")
	id3 := initiate(t, srv, "dir/a")
	initiate(t, srv, "other")
	var got []string
	key, upID := "", ""
	for range 10 {
		q := "uploads&prefix=dir/&max-uploads=1"
		if key != "" {
			q += "&key-marker=" + key + "&upload-id-marker=" + upID
		}
		r := do(t, srv, "GET", "/"+bucket+"?"+q, nil)
		var res struct {
			Uploads []struct {
				Key, StorageClass, Initiated string
				UploadID                     string `xml:"UploadId"`
			} `xml:"Upload"`
			IsTruncated        bool
			NextKeyMarker      string
			NextUploadIDMarker string `xml:"NextUploadIdMarker"`
		}
		if err := xml.Unmarshal(r.body, &res); r.status != 200 || err != nil {
			t.Fatalf("list uploads: %d %s", r.status, r.body)
		}
		for _, u := range res.Uploads {
			got = append(got, u.Key+" "+u.UploadID+" "+u.StorageClass)
		}
		if !res.IsTruncated {
			break
		}
		key, upID = res.NextKeyMarker, res.NextUploadIDMarker
	}
	if want := []string{"dir/a " + id3 + " STANDARD", "dir/big " + id + " COLDLINE", "dir/big " + id2 + " STANDARD"}; !slices.Equal(got, want) {
		t.Fatalf("uploads %q, want %q", got, want)
	}

	// The complete.
	r := complete(t, srv, "dir/big", id, []partRef{{1, e1}, {2, strings.Trim(e2, `"`)}, {3, e3}})
	var res struct {
		XMLName                     xml.Name
		Location, Bucket, Key, ETag string
	}
	if r.status != 200 || xml.Unmarshal(r.body, &res) != nil || res.Bucket != bucket || res.Key != "dir/big" ||
		res.XMLName.Local != "CompleteMultipartUploadResult" || !strings.HasSuffix(res.Location, "/"+bucket+"/dir%2Fbig") {
		t.Fatalf("complete: %d %s", r.status, r.body)
	}
	all := slices.Concat(p1, p2, p3)
	if res.ETag == hexETag(all) || res.ETag != r.header.Get("ETag") {
		t.Fatalf("complete: ETag %s (header %s)", res.ETag, r.header.Get("ETag"))
	}
	if r.header.Get("X-Goog-Generation") == "" || r.header.Get("X-Goog-Metageneration") != "1" ||
		r.header.Values("X-Goog-Hash")[0] != "crc32c="+b64CRC(all) || len(r.header.Values("X-Goog-Hash")) != 1 ||
		r.header.Get("X-Goog-Stored-Content-Length") != strconv.Itoa(len(all)) {
		t.Fatalf("complete: headers %v", r.header)
	}
	back := readXML(t, srv, "dir/big")
	sameBytes(t, "object", back.body, all)
	if back.header.Get("X-Goog-Hash") != "crc32c="+b64CRC(all) || back.header.Get("X-Goog-Generation") != r.header.Get("X-Goog-Generation") {
		t.Fatalf("read back: headers %v", back.header)
	}
	var o jsonObject
	do(t, srv, "GET", objPath("dir/big"), nil).decode(t, &o)
	if o.Md5Hash != "" || o.Crc32c != b64CRC(all) || o.ContentType != "application/x-test" || o.CacheControl != "private" ||
		o.StorageClass != "COLDLINE" || o.Metadata["owner"] != "objup" || o.Size != strconv.Itoa(len(all)) {
		t.Fatalf("object %+v", o)
	}
	var cc struct{ ComponentCount *int }
	do(t, srv, "GET", objPath("dir/big"), nil).decode(t, &cc)
	if cc.ComponentCount != nil {
		t.Fatalf("componentCount %d", *cc.ComponentCount)
	}

	// A complete replaces the live object; an abort drops the rest.
	e := mustPart(t, srv, "dir/big", id2, 1, p3)
	if r := complete(t, srv, "dir/big", id2, []partRef{{1, e}}); r.status != 200 {
		t.Fatalf("second complete: %d %s", r.status, r.body)
	}
	sameBytes(t, "replaced", readXML(t, srv, "dir/big").body, p3)
	for _, u := range srv.MultipartUploads() {
		if r := do(t, srv, "DELETE", xmlPath(u.Object, "uploadId="+u.UploadID), nil); r.status != http.StatusNoContent {
			t.Fatalf("abort: %d %s", r.status, r.body)
		}
	}
	if left := srv.MultipartUploads(); len(left) != 0 {
		t.Fatalf("uploads left: %+v", left)
	}

	var methods []string
	for _, m := range callsOf(srv) {
		if !slices.Contains(methods, m) {
			methods = append(methods, m)
		}
	}
	slices.Sort(methods)
	wantM := []string{"objects.get OK", "xml.multipart.abort OK", "xml.multipart.complete OK", "xml.multipart.initiate OK",
		"xml.multipart.list OK", "xml.multipart.listParts OK", "xml.multipart.uploadPart OK", "xml.objects.get OK"}
	if !slices.Equal(methods, wantM) {
		t.Fatalf("calls %q, want %q", methods, wantM)
	}
}

// TestXMLMultipartRefusals: bad requests get GCS's (S3's) errors and leave
// the upload as it was: a complete of parts out of order, with a wrong
// ETag, a part too small, no part or bad XML, of an unknown, aborted or
// completed upload; a part with a bad number or a digest that does not
// match; preconditions on a multipart call.
func TestXMLMultipartRefusals(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket(bucket))
	big, small := payload(5*mib, 81), payload(100, 82)
	id := initiate(t, srv, "obj")
	e1 := mustPart(t, srv, "obj", id, 1, big)
	e2 := mustPart(t, srv, "obj", id, 2, small)
	e3 := mustPart(t, srv, "obj", id, 3, small)
	post := func(body string) func() *reply {
		return func() *reply { return do(t, srv, "POST", xmlPath("obj", "uploadId="+id), []byte(body)) }
	}
	aborted := initiate(t, srv, "obj")
	if r := do(t, srv, "DELETE", xmlPath("obj", "uploadId="+aborted), nil); r.status != 204 {
		t.Fatalf("abort: %d %s", r.status, r.body)
	}
	for _, tc := range []struct {
		name string
		call func() *reply
		st   int
		code string
	}{
		{"parts out of order", func() *reply { return complete(t, srv, "obj", id, []partRef{{2, e2}, {1, e1}}) }, 400, "InvalidPartOrder"},
		{"a part twice", func() *reply { return complete(t, srv, "obj", id, []partRef{{1, e1}, {1, e1}}) }, 400, "InvalidPartOrder"},
		{"a wrong ETag", func() *reply { return complete(t, srv, "obj", id, []partRef{{1, e2}, {2, e2}}) }, 400, "InvalidPart"},
		{"a part not uploaded", func() *reply { return complete(t, srv, "obj", id, []partRef{{1, e1}, {4, e2}}) }, 400, "InvalidPart"},
		{"a part too small", func() *reply { return complete(t, srv, "obj", id, []partRef{{1, e1}, {2, e2}, {3, e3}}) }, 400, "EntityTooSmall"},
		{"no part", post("<CompleteMultipartUpload></CompleteMultipartUpload>"), 400, "MalformedXML"},
		{"not XML", post("{}"), 400, "MalformedXML"},
		{"another document", post("<Other><Part><PartNumber>1</PartNumber></Part></Other>"), 400, "MalformedXML"},
		{"an unknown upload", func() *reply { return complete(t, srv, "obj", "nope", []partRef{{1, e1}}) }, 404, "NoSuchUpload"},
		{"another object's upload", func() *reply { return complete(t, srv, "obj2", id, []partRef{{1, e1}}) }, 404, "NoSuchUpload"},
		{"abort, then complete", func() *reply { return complete(t, srv, "obj", aborted, []partRef{{1, e1}}) }, 404, "NoSuchUpload"},
		{"abort twice", func() *reply { return do(t, srv, "DELETE", xmlPath("obj", "uploadId="+aborted), nil) }, 404, "NoSuchUpload"},
		{"a part of an aborted upload", func() *reply { return putPart(t, srv, "obj", aborted, 1, small) }, 404, "NoSuchUpload"},
		{"the parts of an aborted upload", func() *reply { return do(t, srv, "GET", xmlPath("obj", "uploadId="+aborted), nil) }, 404, "NoSuchUpload"},
		{"part number 0", func() *reply { return putPart(t, srv, "obj", id, 0, small) }, 400, "InvalidArgument"},
		{"part number 10001", func() *reply { return putPart(t, srv, "obj", id, 10001, small) }, 400, "InvalidArgument"},
		{"part number x", func() *reply {
			return do(t, srv, "PUT", xmlPath("obj", "partNumber=x&uploadId="+id), small)
		}, 400, "InvalidArgument"},
		{"a part's MD5", func() *reply { return putPart(t, srv, "obj", id, 2, small, "Content-MD5", b64MD5(big)) }, 400, "BadDigest"},
		{"a part's CRC32C", func() *reply { return putPart(t, srv, "obj", id, 2, small, "X-Goog-Hash", "crc32c="+b64CRC(big)) }, 400, "BadDigest"},
		{"a part's malformed digest", func() *reply { return putPart(t, srv, "obj", id, 2, small, "X-Goog-Hash", "md5=AA") }, 400, "InvalidDigest"},
		{"a precondition on an initiate", func() *reply {
			return do(t, srv, "POST", xmlPath("obj", "uploads"), nil, "X-Goog-If-Generation-Match", "0")
		}, 400, "InvalidArgument"},
		{"a precondition on a complete", func() *reply {
			return do(t, srv, "POST", xmlPath("obj", "uploadId="+id), completeBody([]partRef{{1, e1}}), "X-Goog-If-Generation-Match", "0")
		}, 400, "InvalidArgument"},
		{"an initiate in no bucket", func() *reply { return do(t, srv, "POST", "/nope/obj?uploads", nil) }, 404, "NoSuchBucket"},
		{"the uploads of no bucket", func() *reply { return do(t, srv, "GET", "/nope?uploads", nil) }, 404, "NoSuchBucket"},
		{"a delimiter", func() *reply { return do(t, srv, "GET", "/"+bucket+"?uploads&delimiter=/", nil) }, 501, "NotImplemented"},
		{"max-parts -1", func() *reply { return do(t, srv, "GET", xmlPath("obj", "uploadId="+id+"&max-parts=-1"), nil) }, 400, "InvalidArgument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantXMLError(t, tc.name, tc.call(), tc.st, tc.code)
		})
	}
	// The upload is as it was: the parts complete, once.
	if got := srv.MultipartUploads(); len(got) != 1 || !slices.Equal(got[0].Parts, []int{1, 2, 3}) || got[0].Size != int64(len(big)+2*len(small)) {
		t.Fatalf("uploads %+v", got)
	}
	if r := complete(t, srv, "obj", id, []partRef{{1, e1}, {3, e3}}); r.status != 200 {
		t.Fatalf("complete: %d %s", r.status, r.body)
	}
	sameBytes(t, "object", readXML(t, srv, "obj").body, slices.Concat(big, small))
	wantXMLError(t, "complete twice", complete(t, srv, "obj", id, []partRef{{1, e1}, {3, e3}}), 404, "NoSuchUpload")
	if got := srv.MultipartUploads(); len(got) != 0 {
		t.Fatalf("uploads left %+v", got)
	}
}
