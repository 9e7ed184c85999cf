package httpx

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"google.golang.org/api/option"
	"google.golang.org/api/option/internaloption"
	htransport "google.golang.org/api/transport/http"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/xfer"
)

// DefaultXMLEndpoint is the XML API's endpoint.
const DefaultXMLEndpoint = "https://storage.googleapis.com/"

// multipart carries the XML API's multipart upload (xfer.Multipart) over an
// HTTP client: the JSON transport's own, or one made for a gRPC client
// with the same credentials.
type multipart struct {
	t *httpTransport // its client and base: scheme://host of the XML API
}

// Multipart returns the XML API's multipart upload over t's client and
// endpoint host.
func Multipart(t xfer.Transport) (xfer.Multipart, bool) {
	ht, ok := t.(*httpTransport)
	if !ok {
		return nil, false
	}
	return &multipart{t: ht}, true
}

// XMLEndpoint returns the XML API's endpoint of a client whose gRPC
// emulator is emulated: STORAGE_EMULATOR_HOST's, or "" when it is unset.
func XMLEndpoint() string {
	host := os.Getenv(httpEmulatorEnv)
	switch {
	case host == "":
		return ""
	case strings.Contains(host, "://"):
		return host
	}
	return "http://" + host
}

// NewMultipart returns the XML API's multipart upload at endpoint (a URL:
// scheme and host), with credentials from apiOpts as
// google.golang.org/api's HTTP transport finds them: the options of a gRPC
// client, whose endpoint the XML endpoint replaces. An emulator's endpoint
// (STORAGE_EMULATOR_HOST's) is reached without credentials, as the JSON
// API's is.
func NewMultipart(ctx context.Context, apiOpts []option.ClientOption, endpoint string, emulator bool) (xfer.Multipart, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("XML endpoint %q is not a URL with a scheme and a host", endpoint)
	}
	if emulator {
		return &multipart{t: &httpTransport{hc: &http.Client{Transport: emulatorTransport()}, base: u.Scheme + "://" + u.Host}}, nil
	}
	opts := []option.ClientOption{
		option.WithScopes("https://www.googleapis.com/auth/devstorage.full_control", "https://www.googleapis.com/auth/cloud-platform"),
		internaloption.WithDefaultEndpointTemplate(DefaultXMLEndpoint),
		internaloption.WithDefaultUniverseDomain("googleapis.com"),
		internaloption.EnableNewAuthLibrary(),
		option.WithTelemetryDisabled(),
	}
	opts = append(append(opts, apiOpts...), option.WithEndpoint(u.Scheme+"://"+u.Host+"/"))
	hc, _, err := htransport.NewClient(ctx, opts...)
	if err != nil {
		return nil, err
	}
	return &multipart{t: &httpTransport{hc: hc, base: u.Scheme + "://" + u.Host}}, nil
}

// objectURL is the XML API's URL of u's object, with query q.
func (m *multipart) objectURL(u *xfer.Request, q string) string {
	return m.t.base + "/" + url.PathEscape(u.Bucket) + "/" + escapeObject(u.Object) + "?" + q
}

// escapeObject escapes an object name for the XML API's path, keeping its
// slashes.
func escapeObject(name string) string {
	segs := strings.Split(name, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// Initiate starts the upload with the object's attributes as headers.
func (m *multipart) Initiate(u *xfer.Request, timeout time.Duration) (string, error) {
	resp, cancel, err := m.t.do(u.Ctx, u, timeout, http.MethodPost, m.objectURL(u, "uploads"), nil, 0, xmlHeaders(u.Spec()))
	if err != nil {
		return "", err
	}
	defer cancel()
	defer closeResponse(resp)
	if resp.StatusCode != http.StatusOK {
		return "", xmlStatusError(resp)
	}
	var r struct {
		UploadID string `xml:"UploadId"`
	}
	if err := readXML(resp.Body, &r); err != nil {
		return "", err
	}
	if r.UploadID == "" {
		return "", status.Error(codes.Internal, "the service started a multipart upload without an upload id")
	}
	return r.UploadID, nil
}

// xmlHeaders are the object's attributes as the XML API takes them.
func xmlHeaders(s *wire.WriteObjectSpec) http.Header {
	o := s.GetResource()
	h := http.Header{}
	for k, v := range map[string]string{
		"Content-Type": o.GetContentType(), "Content-Encoding": o.GetContentEncoding(),
		"Content-Disposition": o.GetContentDisposition(), "Content-Language": o.GetContentLanguage(),
		"Cache-Control": o.GetCacheControl(), "X-Goog-Storage-Class": o.GetStorageClass(),
		"X-Goog-Encryption-Kms-Key-Name": o.GetKmsKey(), "X-Goog-Acl": xmlACL[s.GetPredefinedAcl()],
	} {
		if v != "" {
			h.Set(k, v)
		}
	}
	if t := o.GetCustomTime(); t != nil {
		h.Set("X-Goog-Custom-Time", t.AsTime().Format(time.RFC3339Nano))
	}
	for k, v := range o.GetMetadata() {
		h.Set("X-Goog-Meta-"+k, v)
	}
	return h
}

// xmlACL are the XML API's names of the predefined ACLs.
var xmlACL = map[string]string{
	"authenticatedRead": "authenticated-read", "bucketOwnerFullControl": "bucket-owner-full-control",
	"bucketOwnerRead": "bucket-owner-read", "private": "private", "projectPrivate": "project-private",
	"publicRead": "public-read",
}

// UploadPart PUTs the part with its CRC32C in x-goog-hash.
func (m *multipart) UploadPart(u *xfer.Request, id string, n int, rs []*xfer.ChunkRef, size int64, crc uint32, timeout time.Duration) (string, bool, error) {
	body := bodyOver(u, nil, rs, rs[0].Offset, nil)
	q := "partNumber=" + strconv.Itoa(n) + "&uploadId=" + url.QueryEscape(id)
	hdr := http.Header{"X-Goog-Hash": {"crc32c=" + encodeCRC32C(crc)}}
	resp, cancel, err := m.t.do(u.Ctx, u, timeout, http.MethodPut, m.objectURL(u, q), body, size, hdr)
	if err != nil {
		return "", true, err
	}
	defer cancel()
	defer closeResponse(resp)
	if resp.StatusCode != http.StatusOK {
		return "", true, xmlStatusError(resp)
	}
	etag := resp.Header.Get("ETag")
	if etag == "" {
		return "", true, status.Error(codes.Internal, "the service stored a part without an ETag")
	}
	return etag, true, nil
}

// ListParts lists the upload's parts, a page at a time.
func (m *multipart) ListParts(u *xfer.Request, id string, timeout time.Duration) ([]xfer.MultipartPart, error) {
	var parts []xfer.MultipartPart
	marker := 0
	for {
		q := "uploadId=" + url.QueryEscape(id)
		if marker > 0 {
			q += "&part-number-marker=" + strconv.Itoa(marker)
		}
		resp, cancel, err := m.t.do(u.Ctx, u, timeout, http.MethodGet, m.objectURL(u, q), nil, 0, nil)
		if err != nil {
			return nil, err
		}
		var r struct {
			Parts []struct {
				PartNumber int
				ETag       string
				Size       int64
			} `xml:"Part"`
			IsTruncated          bool
			NextPartNumberMarker int
		}
		if err := readListing(resp, cancel, &r); err != nil {
			return nil, err
		}
		for _, p := range r.Parts {
			parts = append(parts, xfer.MultipartPart{Number: p.PartNumber, ETag: p.ETag, Size: p.Size})
		}
		if !r.IsTruncated || r.NextPartNumberMarker <= marker {
			return parts, nil
		}
		marker = r.NextPartNumberMarker
	}
}

// Complete POSTs the list of parts.
func (m *multipart) Complete(u *xfer.Request, id string, parts []xfer.MultipartPart, timeout time.Duration) (xfer.Completed, error) {
	var b strings.Builder
	b.WriteString("<CompleteMultipartUpload>")
	for _, p := range parts {
		b.WriteString("<Part><PartNumber>" + strconv.Itoa(p.Number) + "</PartNumber><ETag>")
		_ = xml.EscapeText(&b, []byte(p.ETag))
		b.WriteString("</ETag></Part>")
	}
	b.WriteString("</CompleteMultipartUpload>")
	body := bodyOver(u, []byte(b.String()), nil, 0, nil)
	resp, cancel, err := m.t.do(u.Ctx, u, timeout, http.MethodPost, m.objectURL(u, "uploadId="+url.QueryEscape(id)),
		body, body.size(), http.Header{"Content-Type": {"application/xml"}})
	if err != nil {
		return xfer.Completed{}, err
	}
	defer cancel()
	defer closeResponse(resp)
	if resp.StatusCode != http.StatusOK {
		return xfer.Completed{}, xmlStatusError(resp)
	}
	// The XML API may answer 200 and report a failure in the body, as
	// S3 does for a completion that took long.
	var r struct {
		XMLName xml.Name
		Code    string
		Message string
	}
	if err := readXML(resp.Body, &r); err != nil {
		return xfer.Completed{}, err
	}
	if r.XMLName.Local == "Error" {
		return xfer.Completed{}, status.Error(codes.Internal, "HTTP 200 with an error: "+r.Code+": "+r.Message)
	}
	c := xfer.Completed{Size: -1}
	c.Gen, _ = strconv.ParseInt(resp.Header.Get("X-Goog-Generation"), 10, 64)
	c.Metagen, _ = strconv.ParseInt(resp.Header.Get("X-Goog-Metageneration"), 10, 64)
	if s, err := strconv.ParseInt(resp.Header.Get("X-Goog-Stored-Content-Length"), 10, 64); err == nil {
		c.Size = s
	}
	c.CRC32C, c.HasCRC = hashCRC32C(resp.Header.Values("X-Goog-Hash"))
	return c, nil
}

// hashCRC32C reads the CRC32C of x-goog-hash headers (crc32c=B64, one
// or several per header).
func hashCRC32C(values []string) (uint32, bool) {
	for _, v := range values {
		for _, kv := range strings.Split(v, ",") {
			k, val, _ := strings.Cut(strings.TrimSpace(kv), "=")
			if k != "crc32c" {
				continue
			}
			b, err := base64.StdEncoding.DecodeString(val)
			if err != nil || len(b) != 4 {
				return 0, false
			}
			return binary.BigEndian.Uint32(b), true
		}
	}
	return 0, false
}

// Abort DELETEs the upload.
func (m *multipart) Abort(u *xfer.Request, id string, timeout time.Duration) error {
	resp, cancel, err := m.t.do(u.Ctx, u, timeout, http.MethodDelete, m.objectURL(u, "uploadId="+url.QueryEscape(id)), nil, 0, nil)
	if err != nil {
		return err
	}
	defer cancel()
	defer closeResponse(resp)
	if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusOK {
		return xmlStatusError(resp)
	}
	return nil
}

// ListUploads lists the bucket's uploads under the object's name and
// keeps those of the object that began from from to to.
func (m *multipart) ListUploads(u *xfer.Request, from, to time.Time, timeout time.Duration) ([]string, error) {
	var ids []string
	var keyMarker, idMarker string
	for {
		q := url.Values{"prefix": {u.Object}}
		if keyMarker != "" {
			q.Set("key-marker", keyMarker)
			q.Set("upload-id-marker", idMarker)
		}
		resp, cancel, err := m.t.do(u.Ctx, u, timeout, http.MethodGet, m.t.base+"/"+url.PathEscape(u.Bucket)+"?uploads&"+q.Encode(), nil, 0, nil)
		if err != nil {
			return nil, err
		}
		var r struct {
			Uploads []struct {
				Key       string
				UploadID  string `xml:"UploadId"`
				Initiated time.Time
			} `xml:"Upload"`
			IsTruncated        bool
			NextKeyMarker      string
			NextUploadIDMarker string `xml:"NextUploadIdMarker"`
		}
		if err := readListing(resp, cancel, &r); err != nil {
			return nil, err
		}
		for _, up := range r.Uploads {
			if up.Key == u.Object && !up.Initiated.Before(from) && !up.Initiated.After(to) {
				ids = append(ids, up.UploadID)
			}
		}
		if !r.IsTruncated || r.NextKeyMarker == "" && r.NextUploadIDMarker == "" {
			return ids, nil
		}
		keyMarker, idMarker = r.NextKeyMarker, r.NextUploadIDMarker
	}
}

// readListing reads a listing's answer into v, or its error, and releases
// the response.
func readListing(resp *http.Response, cancel context.CancelFunc, v any) error {
	defer cancel()
	defer closeResponse(resp)
	if resp.StatusCode != http.StatusOK {
		return xmlStatusError(resp)
	}
	return readXML(resp.Body, v)
}

// readXML decodes an XML answer into v.
func readXML(r io.Reader, v any) error {
	if err := xml.NewDecoder(io.LimitReader(r, 16<<20)).Decode(v); err != nil {
		return status.Error(codes.Unavailable, "the service's XML answer does not decode: "+err.Error())
	}
	return nil
}

// xmlStatusError reads the XML API's error document into a gRPC status
// error with the code the HTTP status means (a digest the service refused
// is DataLoss).
func xmlStatusError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e struct {
		Code    string
		Message string
	}
	msg := strings.TrimSpace(string(body))
	if xml.Unmarshal(body, &e) == nil && e.Code != "" {
		msg = e.Code + ": " + e.Message
	}
	msg = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, msg)
	code := httpCode(resp.StatusCode, msg)
	switch e.Code {
	case "BadDigest", "InvalidDigest":
		code = codes.DataLoss
	case "NoSuchUpload":
		code = codes.NotFound
	}
	return status.Error(code, msg)
}
