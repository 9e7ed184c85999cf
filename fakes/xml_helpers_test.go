package fakes_test

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/objup/objup/fakes"
)

// Helpers of the XML API's tests: requests over loopback HTTP to the
// path-style routes, and the documents they answer.

// xmlPath is the path of object name in the test bucket, with a query.
func xmlPath(name, query string) string {
	p := "/" + bucket + "/" + url.PathEscape(name)
	if query != "" {
		p += "?" + query
	}
	return p
}

// xmlCode returns the XML API error code of a reply, "" if it is not an
// XML error document.
func xmlCode(r *reply) string {
	var e struct {
		Code, Message, Details string
	}
	if xml.Unmarshal(r.body, &e) != nil || e.Message == "" || e.Details == "" {
		return ""
	}
	return e.Code
}

// wantXMLError checks that r is an XML error with status st and code.
func wantXMLError(t *testing.T, what string, r *reply, st int, code string) {
	t.Helper()
	if r.status != st || xmlCode(r) != code {
		t.Fatalf("%s: %d %s; want %d %s", what, r.status, r.body, st, code)
	}
}

// hexETag is the ETag of a part (or a simple upload) of bytes b.
func hexETag(b []byte) string {
	s := md5.Sum(b)
	return `"` + hex.EncodeToString(s[:]) + `"`
}

// initiate starts a multipart upload of name and returns its ID.
func initiate(t *testing.T, srv *fakes.Server, name string, hdr ...string) string {
	t.Helper()
	r := do(t, srv, "POST", xmlPath(name, "uploads"), nil, hdr...)
	var res struct {
		XMLName  xml.Name
		Bucket   string
		Key      string
		UploadID string `xml:"UploadId"`
	}
	if r.status != http.StatusOK || xml.Unmarshal(r.body, &res) != nil || res.UploadID == "" {
		t.Fatalf("initiate %s: %d %s", name, r.status, r.body)
	}
	if res.XMLName.Space != "http://s3.amazonaws.com/doc/2006-03-01/" || res.XMLName.Local != "InitiateMultipartUploadResult" ||
		res.Bucket != bucket || res.Key != name {
		t.Fatalf("initiate %s: %s", name, r.body)
	}
	return res.UploadID
}

// putPart uploads part n of upload id.
func putPart(t *testing.T, srv *fakes.Server, name, id string, n int, body []byte, hdr ...string) *reply {
	t.Helper()
	return do(t, srv, "PUT", xmlPath(name, "partNumber="+strconv.Itoa(n)+"&uploadId="+url.QueryEscape(id)), body, hdr...)
}

// mustPart uploads part n and checks its ETag and x-goog-hash.
func mustPart(t *testing.T, srv *fakes.Server, name, id string, n int, body []byte, hdr ...string) string {
	t.Helper()
	r := putPart(t, srv, name, id, n, body, hdr...)
	if r.status != http.StatusOK || r.header.Get("ETag") != hexETag(body) {
		t.Fatalf("part %d: %d %s, ETag %q; want %q", n, r.status, r.body, r.header.Get("ETag"), hexETag(body))
	}
	if h := strings.Join(r.header.Values("X-Goog-Hash"), ","); h != "crc32c="+b64CRC(body)+",md5="+b64MD5(body) {
		t.Fatalf("part %d: x-goog-hash %q", n, h)
	}
	return r.header.Get("ETag")
}

// partRef names a part in a complete.
type partRef struct {
	n    int
	etag string
}

// completeBody is the CompleteMultipartUpload document of parts.
func completeBody(parts []partRef) []byte {
	var b bytes.Buffer
	b.WriteString("<CompleteMultipartUpload>")
	for _, p := range parts {
		fmt.Fprintf(&b, "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>", p.n, p.etag)
	}
	b.WriteString("</CompleteMultipartUpload>")
	return b.Bytes()
}

// complete completes upload id with parts.
func complete(t *testing.T, srv *fakes.Server, name, id string, parts []partRef, hdr ...string) *reply {
	t.Helper()
	return do(t, srv, "POST", xmlPath(name, "uploadId="+url.QueryEscape(id)), completeBody(parts), hdr...)
}

// readXML reads an object back over the path-style route.
func readXML(t *testing.T, srv *fakes.Server, name string) *reply {
	t.Helper()
	return do(t, srv, "GET", xmlPath(name, ""), nil)
}

// rawDo sends one request and returns its reply, or the error of a
// request whose connection the server closed.
func rawDo(t *testing.T, srv *fakes.Server, method, path string, body []byte, hdr ...string) (*reply, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), method, srv.HTTPURL()+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &reply{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// callsOf returns the methods of the calls the server logged since the
// last ResetCalls, with their codes.
func callsOf(srv *fakes.Server) []string {
	var out []string
	for _, c := range srv.Calls() {
		out = append(out, c.Method+" "+c.Code.String())
	}
	return out
}
