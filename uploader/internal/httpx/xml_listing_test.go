package httpx

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestXMLListParts: the parts are listed a page at a time, each page
// asked from the marker the last one gave, until a page is not
// truncated, or gives no marker past the last; an upload the service
// does not know is NotFound.
func TestXMLListParts(t *testing.T) {
	page := func(truncated bool, next int, parts ...int) string {
		var b strings.Builder
		b.WriteString("<ListPartsResult><Bucket>b</Bucket><Key>o</Key><UploadId>ID</UploadId>")
		for _, n := range parts {
			fmt.Fprintf(&b, "<Part><PartNumber>%d</PartNumber><LastModified>2024-05-06T07:08:09.000Z</LastModified><ETag>\"e%d\"</ETag><Size>%d</Size></Part>", n, n, n*1000)
		}
		fmt.Fprintf(&b, "<IsTruncated>%v</IsTruncated><NextPartNumberMarker>%d</NextPartNumberMarker></ListPartsResult>", truncated, next)
		return b.String()
	}
	for _, tc := range []struct {
		name    string
		pages   map[string]string // by query
		parts   []int
		queries []string
		code    codes.Code
	}{
		{name: "one page", pages: map[string]string{"uploadId=ID": page(false, 0, 1, 2)},
			parts: []int{1, 2}, queries: []string{"uploadId=ID"}},
		{name: "three pages", pages: map[string]string{
			"uploadId=ID":                      page(true, 2, 1, 2),
			"uploadId=ID&part-number-marker=2": page(true, 4, 3, 4),
			"uploadId=ID&part-number-marker=4": page(false, 0, 9),
		}, parts: []int{1, 2, 3, 4, 9}, queries: []string{"uploadId=ID", "uploadId=ID&part-number-marker=2", "uploadId=ID&part-number-marker=4"}},
		{name: "truncated without a marker past the last", pages: map[string]string{
			"uploadId=ID":                      page(true, 2, 1, 2),
			"uploadId=ID&part-number-marker=2": page(true, 2, 3),
		}, parts: []int{1, 2, 3}, queries: []string{"uploadId=ID", "uploadId=ID&part-number-marker=2"}},
		{name: "no part", pages: map[string]string{"uploadId=ID": page(false, 0)}, queries: []string{"uploadId=ID"}},
		{name: "no such upload", code: codes.NotFound, queries: []string{"uploadId=ID"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := new(xmlService)
			s.answer = func(w http.ResponseWriter, r xmlRequest) {
				if len(s.requests()) > 10 {
					// A listing that asks for the same page again and
					// again fails instead of hanging the test.
					xmlError(w, http.StatusBadRequest, "InvalidArgument", "asked too often")
					return
				}
				if p, ok := tc.pages[r.query]; ok {
					xmlOK(w, p)
					return
				}
				xmlError(w, http.StatusNotFound, "NoSuchUpload", "The requested upload was not found.")
			}
			m := newXML(t, s)
			a := new(testAlloc)
			u, r := newUpload(a, nil)
			r.Unref()
			parts, err := m.ListParts(u, "ID", xmlTimeout)
			if status.Code(err) != tc.code {
				t.Fatalf("ListParts: %v, want code %v", err, tc.code)
			}
			var got []int
			for _, p := range parts {
				got = append(got, p.Number)
				if p.ETag != fmt.Sprintf("\"e%d\"", p.Number) || p.Size != int64(p.Number*1000) {
					t.Fatalf("part %+v: want its ETag and size", p)
				}
			}
			if !slices.Equal(got, tc.parts) {
				t.Fatalf("parts %v, want %v", got, tc.parts)
			}
			var queries []string
			for _, q := range s.requests() {
				if q.method != http.MethodGet || q.path != "/b/o" {
					t.Fatalf("%s %s, want GET /b/o", q.method, q.path)
				}
				queries = append(queries, q.query)
			}
			if !slices.Equal(queries, tc.queries) {
				t.Fatalf("queries %q, want %q", queries, tc.queries)
			}
		})
	}
}

// TestXMLListUploads: the bucket's uploads under the object's name are
// listed a page at a time (?uploads&prefix=, then the key and upload id
// markers the last page gave), and only the object's own, begun from
// from to to, are kept.
func TestXMLListUploads(t *testing.T) {
	from := time.Date(2024, 5, 6, 7, 0, 0, 0, time.UTC)
	to := from.Add(time.Minute)
	upload := func(key, id string, at time.Time) string {
		return "<Upload><Key>" + key + "</Key><UploadId>" + id + "</UploadId><Initiated>" + at.Format("2006-01-02T15:04:05.000Z") + "</Initiated></Upload>"
	}
	pages := map[string]string{
		"uploads&prefix=o": "<ListMultipartUploadsResult><Bucket>b</Bucket>" +
			upload("o", "early", from.Add(-time.Second)) + upload("o", "u1", from) + upload("o2", "other", from.Add(time.Second)) +
			"<IsTruncated>true</IsTruncated><NextKeyMarker>o</NextKeyMarker><NextUploadIdMarker>u1</NextUploadIdMarker></ListMultipartUploadsResult>",
		"uploads&key-marker=o&prefix=o&upload-id-marker=u1": "<ListMultipartUploadsResult><Bucket>b</Bucket>" +
			upload("o", "u2", to) + upload("o", "late", to.Add(time.Millisecond)) +
			"<IsTruncated>false</IsTruncated></ListMultipartUploadsResult>",
	}
	s := &xmlService{answer: func(w http.ResponseWriter, r xmlRequest) {
		if p, ok := pages[r.query]; ok {
			xmlOK(w, p)
			return
		}
		xmlError(w, http.StatusBadRequest, "InvalidArgument", "unexpected query "+r.query)
	}}
	m := newXML(t, s)
	a := new(testAlloc)
	u, r := newUpload(a, nil)
	r.Unref()
	ids, err := m.ListUploads(u, from, to, xmlTimeout)
	if err != nil || !slices.Equal(ids, []string{"u1", "u2"}) {
		t.Fatalf("ListUploads: %q, %v; want u1 and u2", ids, err)
	}
	reqs := s.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for _, q := range reqs {
		if q.method != http.MethodGet || q.path != "/b" {
			t.Fatalf("%s %s, want GET /b", q.method, q.path)
		}
	}
}
