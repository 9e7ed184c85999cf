package httpx

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/header"
	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/uploader/internal/retry"
	"github.com/objup/objup/uploader/internal/xfer"
)

// The XML API's multipart upload on its own, against an httptest.Server
// that each test scripts with GCS's XML answers: a failure here is the
// XML calls'.

// xmlRequest is a request the scripted XML API received.
type xmlRequest struct {
	method string
	path   string // escaped, as it went on the wire
	query  string
	header http.Header
	body   []byte
}

// xmlService is a scripted XML API: answer writes the answer to each
// request, which it records.
type xmlService struct {
	answer func(w http.ResponseWriter, r xmlRequest)

	mu   sync.Mutex
	reqs []xmlRequest
}

func (s *xmlService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := xmlRequest{method: r.Method, path: r.URL.EscapedPath(), query: r.URL.RawQuery, header: r.Header.Clone(), body: body}
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	s.answer(w, req)
}

// requests returns the requests received.
func (s *xmlService) requests() []xmlRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

// newXML returns the XML API's multipart upload to s.
func newXML(t *testing.T, s *xmlService) xfer.Multipart {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	m, err := NewMultipart(context.Background(), nil, srv.URL, true)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// xmlError writes GCS's XML error document with HTTP status sc.
func xmlError(w http.ResponseWriter, sc int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml; charset=UTF-8")
	w.WriteHeader(sc)
	fmt.Fprintf(w, "<?xml version='1.0' encoding='UTF-8'?><Error><Code>%s</Code><Message>%s</Message></Error>", code, msg)
}

// xmlOK writes a 200 answer with body.
func xmlOK(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/xml; charset=UTF-8")
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, "<?xml version='1.0' encoding='UTF-8'?>"+body)
}

// crcHash is the x-goog-hash value of crc.
func crcHash(crc uint32) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], crc)
	return "crc32c=" + base64.StdEncoding.EncodeToString(b[:])
}

const xmlTimeout = 10 * time.Second

// TestXMLInitiate: the initiate is a POST of the object's URL (its name
// escaped, its slashes kept) with ?uploads, the object's attributes and
// the context's headers as headers; the upload id comes from the answer's
// XML; an answer without one, or that does not decode, is an error.
func TestXMLInitiate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(w http.ResponseWriter)
		id     string
		code   codes.Code
	}{
		{name: "started", id: "ABC/def+1", answer: func(w http.ResponseWriter) {
			xmlOK(w, "<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>dir/a b?c#d%</Key><UploadId>ABC/def+1</UploadId></InitiateMultipartUploadResult>")
		}},
		{name: "no upload id", code: codes.Internal, answer: func(w http.ResponseWriter) {
			xmlOK(w, "<InitiateMultipartUploadResult><Bucket>b</Bucket></InitiateMultipartUploadResult>")
		}},
		{name: "an answer that is not XML", code: codes.Unavailable, answer: func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, "<html>a proxy's page")
		}},
		{name: "access denied", code: codes.PermissionDenied, answer: func(w http.ResponseWriter) {
			xmlError(w, http.StatusForbidden, "AccessDenied", "no storage.objects.create")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &xmlService{answer: func(w http.ResponseWriter, _ xmlRequest) { tc.answer(w) }}
			m := newXML(t, s)
			a := new(testAlloc)
			u, r := newUpload(a, nil)
			r.Unref()
			u.Object = "dir/a b?c#d%"
			u.Ctx = header.Append(context.Background(), "x-goog-user-project", "billed")
			o := u.Spec().GetResource()
			o.ContentType, o.CacheControl, o.StorageClass = "text/plain", "no-cache", "NEARLINE"
			o.Metadata = map[string]string{"color": "blue"}
			o.CustomTime = timestamppb.New(time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC))
			u.Spec().PredefinedAcl = "publicRead"
			id, err := m.Initiate(u, xmlTimeout)
			if status.Code(err) != tc.code || id != tc.id {
				t.Fatalf("Initiate: %q, %v; want %q, code %v", id, err, tc.id, tc.code)
			}
			reqs := s.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			q := reqs[0]
			if q.method != http.MethodPost || q.path != "/b/dir/a%20b%3Fc%23d%25" || q.query != "uploads" {
				t.Fatalf("%s %s?%s; want POST /b/dir/a%%20b%%3Fc%%23d%%25?uploads", q.method, q.path, q.query)
			}
			for k, v := range map[string]string{
				"Content-Type": "text/plain", "Cache-Control": "no-cache", "X-Goog-Storage-Class": "NEARLINE",
				"X-Goog-Meta-Color": "blue", "X-Goog-Acl": "public-read", "X-Goog-Custom-Time": "2024-05-06T07:08:09Z",
				"X-Goog-User-Project": "billed",
			} {
				if got := q.header.Get(k); got != v {
					t.Errorf("header %s: %q, want %q", k, got, v)
				}
			}
			for _, k := range []string{"Content-Encoding", "Content-Disposition", "X-Goog-Encryption-Kms-Key-Name"} {
				if got, ok := q.header[k]; ok {
					t.Errorf("header %s sent (%q) for an attribute not set", k, got)
				}
			}
		})
	}
}

// partRefs returns data's chunks in u, of chunk bytes each, their offsets
// counted from 0 (a part is an object of its own), and the CRC32C of data.
func partRefs(u *xfer.Request, a *testAlloc, data []byte, chunk int) ([]*xfer.ChunkRef, uint32) {
	var rs []*xfer.ChunkRef
	for off := 0; off < len(data); off += chunk {
		b, _ := a.Get(context.Background())
		n := copy(*b, data[off:min(off+chunk, len(data))])
		rs = append(rs, u.Life.NewRef(chunker.Chunk{Buf: b, Data: (*b)[:n], Offset: int64(off), CRC32C: crc32c.Checksum((*b)[:n])}))
	}
	return rs, crc32c.Checksum(data)
}

// TestXMLUploadPart: a part is one PUT of the object's URL with
// ?partNumber=&uploadId= (escaped), its chunks as the body with their
// length, and the part's CRC32C in x-goog-hash; the ETag comes from the
// answer's header; an answer without one is an error; the request holds
// the chunks only while it reads them.
func TestXMLUploadPart(t *testing.T) {
	const size = 300 << 10
	for _, tc := range []struct {
		name   string
		answer func(w http.ResponseWriter)
		etag   string
		code   codes.Code
	}{
		{name: "stored", etag: `"9b2cf535f27731c974343645a3985328"`, answer: func(w http.ResponseWriter) {
			w.Header().Set("ETag", `"9b2cf535f27731c974343645a3985328"`)
		}},
		{name: "no ETag", code: codes.Internal, answer: func(w http.ResponseWriter) {}},
		{name: "the digest refused", code: codes.DataLoss, answer: func(w http.ResponseWriter) {
			xmlError(w, http.StatusBadRequest, "BadDigest", "The CRC32C you specified did not match what we received.")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &xmlService{answer: func(w http.ResponseWriter, _ xmlRequest) { tc.answer(w) }}
			m := newXML(t, s)
			a := new(testAlloc)
			u, r := newUpload(a, nil)
			r.Unref()
			data := payload(size)
			rs, crc := partRefs(u, a, data, 128<<10)
			etag, sent, err := m.UploadPart(u, "ID/1+", 3, rs, size, crc, xmlTimeout)
			for _, r := range rs {
				r.Unref()
			}
			u.Life.Wait()
			if status.Code(err) != tc.code || etag != tc.etag || !sent {
				t.Fatalf("UploadPart: %q, sent %v, %v; want %q, code %v", etag, sent, err, tc.etag, tc.code)
			}
			q := s.requests()[0]
			switch {
			case q.method != http.MethodPut || q.path != "/b/o" || q.query != "partNumber=3&uploadId=ID%2F1%2B":
				t.Fatalf("%s %s?%s; want PUT /b/o?partNumber=3&uploadId=ID%%2F1%%2B", q.method, q.path, q.query)
			case q.header.Get("X-Goog-Hash") != crcHash(crc):
				t.Fatalf("x-goog-hash %q, want %q", q.header.Get("X-Goog-Hash"), crcHash(crc))
			case q.header.Get("Content-Length") != fmt.Sprint(size) || !bytes.Equal(q.body, data):
				t.Fatalf("Content-Length %s, %d bytes received; want the part's %d", q.header.Get("Content-Length"), len(q.body), size)
			}
			a.mu.Lock()
			defer a.mu.Unlock()
			if a.out != 0 {
				t.Fatalf("%d buffers not given back", a.out)
			}
		})
	}
}

// TestXMLComplete: the complete POSTs ?uploadId= with an XML body that
// lists the parts as given (ascending), each with its ETag (escaped);
// the object's generation, metageneration, stored size and CRC32C come
// from the answer's headers (x-goog-hash in one header or several), and
// are zero, or -1 for the size, when absent; a 200 whose body is an
// error document is an error the retries take as a lost answer.
func TestXMLComplete(t *testing.T) {
	parts := []xfer.MultipartPart{{Number: 1, ETag: `"a1"`}, {Number: 2, ETag: `"b&<2>"`}, {Number: 7, ETag: "c3"}}
	const done = "<CompleteMultipartUploadResult><Bucket>b</Bucket><Key>o</Key><ETag>\"x-3\"</ETag></CompleteMultipartUploadResult>"
	for _, tc := range []struct {
		name   string
		answer func(w http.ResponseWriter)
		want   xfer.Completed
		code   codes.Code
	}{
		{name: "completed", want: xfer.Completed{Gen: 1700000000000001, Metagen: 1, CRC32C: 0xdeadbeef, HasCRC: true, Size: 12345},
			answer: func(w http.ResponseWriter) {
				h := w.Header()
				h.Set("X-Goog-Generation", "1700000000000001")
				h.Set("X-Goog-Metageneration", "1")
				h.Set("X-Goog-Stored-Content-Length", "12345")
				h.Add("X-Goog-Hash", "md5=1B2M2Y8AsgTpgAmY7PhCfg==")
				h.Add("X-Goog-Hash", crcHash(0xdeadbeef))
				xmlOK(w, done)
			}},
		{name: "both hashes in one header", want: xfer.Completed{Gen: 5, CRC32C: 7, HasCRC: true, Size: -1},
			answer: func(w http.ResponseWriter) {
				w.Header().Set("X-Goog-Generation", "5")
				w.Header().Set("X-Goog-Hash", "md5=1B2M2Y8AsgTpgAmY7PhCfg==, "+crcHash(7))
				xmlOK(w, done)
			}},
		{name: "no headers", want: xfer.Completed{Size: -1}, answer: func(w http.ResponseWriter) { xmlOK(w, done) }},
		{name: "a 200 that reports an error", code: codes.Internal, answer: func(w http.ResponseWriter) {
			xmlOK(w, "<Error><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>")
		}},
		{name: "no such upload", code: codes.NotFound, answer: func(w http.ResponseWriter) {
			xmlError(w, http.StatusNotFound, "NoSuchUpload", "The requested upload was not found.")
		}},
		{name: "a part not uploaded", code: codes.InvalidArgument, answer: func(w http.ResponseWriter) {
			xmlError(w, http.StatusBadRequest, "InvalidPart", "One or more of the specified parts could not be found.")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &xmlService{answer: func(w http.ResponseWriter, _ xmlRequest) { tc.answer(w) }}
			m := newXML(t, s)
			a := new(testAlloc)
			u, r := newUpload(a, nil)
			r.Unref()
			c, err := m.Complete(u, "ID", parts, xmlTimeout)
			if status.Code(err) != tc.code || c != tc.want {
				t.Fatalf("Complete: %+v, %v; want %+v, code %v", c, err, tc.want, tc.code)
			}
			// A 200 that reports an error leaves open whether the upload
			// completed: the mode settles it as a lost answer.
			if tc.code != codes.OK && retry.AnswerLost(err) != (tc.code == codes.Internal) {
				t.Fatalf("Complete: %v: taken as a lost answer: %v", err, retry.AnswerLost(err))
			}
			q := s.requests()[0]
			if q.method != http.MethodPost || q.path != "/b/o" || q.query != "uploadId=ID" || q.header.Get("Content-Type") != "application/xml" {
				t.Fatalf("%s %s?%s (%s); want POST /b/o?uploadId=ID of application/xml", q.method, q.path, q.query, q.header.Get("Content-Type"))
			}
			var body struct {
				XMLName xml.Name `xml:"CompleteMultipartUpload"`
				Parts   []struct {
					PartNumber int
					ETag       string
				} `xml:"Part"`
			}
			if err := xml.Unmarshal(q.body, &body); err != nil {
				t.Fatalf("the body %q does not decode: %v", q.body, err)
			}
			if len(body.Parts) != len(parts) {
				t.Fatalf("the body lists %d parts, want %d: %s", len(body.Parts), len(parts), q.body)
			}
			for i, p := range body.Parts {
				if p.PartNumber != parts[i].Number || p.ETag != parts[i].ETag {
					t.Fatalf("the body's part %d is %d %q, want %d %q", i, p.PartNumber, p.ETag, parts[i].Number, parts[i].ETag)
				}
			}
		})
	}
}

// TestXMLAbort: the abort DELETEs ?uploadId=; 204 and 200 are done; an
// upload the service does not know is NotFound.
func TestXMLAbort(t *testing.T) {
	for _, tc := range []struct {
		name string
		sc   int
		code codes.Code
	}{
		{name: "204", sc: http.StatusNoContent},
		{name: "200", sc: http.StatusOK},
		{name: "no such upload", sc: http.StatusNotFound, code: codes.NotFound},
		{name: "access denied", sc: http.StatusForbidden, code: codes.PermissionDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &xmlService{answer: func(w http.ResponseWriter, _ xmlRequest) {
				switch tc.sc {
				case http.StatusNotFound:
					xmlError(w, tc.sc, "NoSuchUpload", "The requested upload was not found.")
				case http.StatusForbidden:
					xmlError(w, tc.sc, "AccessDenied", "no storage.multipartUploads.abort")
				default:
					w.WriteHeader(tc.sc)
				}
			}}
			m := newXML(t, s)
			a := new(testAlloc)
			u, r := newUpload(a, nil)
			r.Unref()
			if err := m.Abort(u, "ID/1", xmlTimeout); status.Code(err) != tc.code {
				t.Fatalf("Abort: %v, want code %v", err, tc.code)
			}
			q := s.requests()[0]
			if q.method != http.MethodDelete || q.path != "/b/o" || q.query != "uploadId=ID%2F1" {
				t.Fatalf("%s %s?%s; want DELETE /b/o?uploadId=ID%%2F1", q.method, q.path, q.query)
			}
		})
	}
}
