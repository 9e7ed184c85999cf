package fakes_test

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/objup/objup/fakes"
)

// TestXMLListObjects: GET /BUCKET lists the live objects as the XML API
// does, with prefix, delimiter, marker and max-keys, as gsutil's XML mode
// lists a destination before it copies.
func TestXMLListObjects(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket(bucket))
	for _, n := range []string{"a/1", "a/2", "b", "c/x/y", "d"} {
		if r := do(t, srv, "PUT", xmlPath(n, ""), []byte(n)); r.status != 200 {
			t.Fatalf("PUT %s: %d", n, r.status)
		}
	}
	for _, tc := range []struct {
		query string
		want  string // the keys, then the prefixes, then the next marker if truncated
	}{
		{"", "a/1 a/2 b c/x/y d"},
		{"prefix=a/", "a/1 a/2"},
		{"delimiter=/", "b d | a/ c/"},
		{"delimiter=/&prefix=c/", "| c/x/"},
		{"max-keys=2", "a/1 a/2 > a/2"},
		{"max-keys=2&marker=a/2", "b c/x/y > c/x/y"},
		{"marker=c/x/y", "d"},
		{"max-keys=0", ""},
		{"encoding-type=url&prefix=a/", "a%2F1 a%2F2"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			r := do(t, srv, "GET", "/"+bucket+"?"+tc.query, nil)
			var res struct {
				XMLName  xml.Name
				Contents []struct {
					Key                        string
					Generation, MetaGeneration int64
					ETag                       string
					Size                       int
				}
				CommonPrefixes []struct{ Prefix string }
				IsTruncated    bool
				NextMarker     string
			}
			if r.status != 200 || xml.Unmarshal(r.body, &res) != nil || res.XMLName.Local != "ListBucketResult" {
				t.Fatalf("list: %d %s", r.status, r.body)
			}
			var got []string
			for _, c := range res.Contents {
				if c.Generation == 0 || c.MetaGeneration != 1 || c.Size == 0 || c.ETag == "" {
					t.Fatalf("entry %+v", c)
				}
				got = append(got, c.Key)
			}
			if len(res.CommonPrefixes) > 0 {
				got = append(got, "|")
			}
			for _, p := range res.CommonPrefixes {
				got = append(got, p.Prefix)
			}
			if res.IsTruncated {
				got = append(got, ">", res.NextMarker)
			}
			if s := strings.Join(got, " "); s != tc.want {
				t.Fatalf("got %q, want %q", s, tc.want)
			}
		})
	}
	wantXMLError(t, "no bucket", do(t, srv, "GET", "/nope", nil), 404, "NoSuchBucket")
	wantXMLError(t, "versions", do(t, srv, "GET", "/"+bucket+"?versions", nil), 501, "NotImplemented")
	for _, q := range []string{"acl", "retention", "encryption"} {
		wantXMLError(t, "GET ?"+q, do(t, srv, "GET", xmlPath("b", q), nil), 501, "NotImplemented")
	}
}

// TestXMLHeaderNames: the XML API's answers name their x-goog-* headers in
// lower case, as GCS does (boto, under gsutil, reads x-goog-hash so), and
// an object with an MD5 has it in hex as its ETag.
func TestXMLHeaderNames(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket(bucket))
	body := []byte("header names")
	do(t, srv, "PUT", xmlPath("h", ""), body)
	for _, method := range []string{"HEAD", "PUT"} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(srv.HTTPURL(), "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "%s /%s/h HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", method, bucket, len(body))
		if method == "PUT" {
			conn.Write(body)
		}
		var names []string
		etag := ""
		sc := bufio.NewScanner(conn)
		for sc.Scan() && sc.Text() != "" {
			k, v, _ := strings.Cut(sc.Text(), ": ")
			if strings.HasPrefix(strings.ToLower(k), "x-goog-") {
				names = append(names, k)
			}
			if strings.EqualFold(k, "etag") {
				etag = v
			}
		}
		conn.Close()
		if !slices.Contains(names, "x-goog-hash") || !slices.Contains(names, "x-goog-generation") || etag != hexETag(body) {
			t.Fatalf("%s: x-goog headers %q, ETag %s", method, names, etag)
		}
		for _, n := range names {
			if n != strings.ToLower(n) {
				t.Fatalf("%s: header %q", method, n)
			}
		}
	}
}
