package fakes_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/objup/objup/fakes"
)

// rawRequest writes head and body to a new connection to the fake's JSON
// port, half-closes it (the client will send nothing more) and returns the
// status the fake answers, or 0 if it closed the connection without one.
func rawRequest(t *testing.T, srv *fakes.Server, head, body string) int {
	t.Helper()
	u, _ := url.Parse(srv.HTTPURL())
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(head + "\r\n" + body)); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	// The deadline bounds the test, should the fake never answer.
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestCutShortBodiesStoreNothing: a JSON upload whose body ends before its
// declared length, before its multipart closing delimiter, with a mistyped
// delimiter, or a chunked body cut off, is refused and stores nothing, as
// GCS never keeps a partial object. The same uploads, whole, are stored.
func TestCutShortBodiesStoreNothing(t *testing.T) {
	srv, _ := start(t)
	const boundary = "b0undary"
	multipart := func(name, closing string) string {
		return "--" + boundary + "\r\nContent-Type: application/json\r\n\r\n{\"name\":\"" + name + "\"}\r\n" +
			"--" + boundary + "\r\nContent-Type: text/plain\r\n\r\n" + strings.Repeat("m", 60<<10) + closing
	}
	multipartHead := func(n int) string {
		return fmt.Sprintf("POST /upload/storage/v1/b/%s/o?uploadType=multipart HTTP/1.1\r\nHost: x\r\n"+
			"Content-Type: multipart/related; boundary=%s\r\nContent-Length: %d\r\n", bucket, boundary, n)
	}
	mediaHead := func(name, length string) string {
		return fmt.Sprintf("POST /upload/storage/v1/b/%s/o?uploadType=media&name=%s HTTP/1.1\r\nHost: x\r\n"+
			"Content-Type: text/plain\r\n%s", bucket, name, length)
	}
	chunk := func(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }
	for _, tc := range []struct {
		name   string
		object string
		head   string
		body   string
		stored bool
	}{
		{"multipart, whole", "mp-whole", multipartHead(len(multipart("mp-whole", "\r\n--"+boundary+"--\r\n"))),
			multipart("mp-whole", "\r\n--"+boundary+"--\r\n"), true},
		{"multipart without its closing delimiter", "mp-open", multipartHead(len(multipart("mp-open", ""))),
			multipart("mp-open", ""), false},
		{"multipart with a mistyped closing delimiter", "mp-typo", multipartHead(len(multipart("mp-typo", "\r\n--"+boundary+"-\r\n"))),
			multipart("mp-typo", "\r\n--"+boundary+"-\r\n"), false},
		{"multipart cut before its Content-Length", "mp-cut", multipartHead(len(multipart("mp-cut", "\r\n--"+boundary+"--\r\n"))),
			multipart("mp-cut", "\r\n--"+boundary+"--\r\n")[:40<<10], false},
		{"media, whole", "media-whole", mediaHead("media-whole", "Content-Length: 5\r\n"), "hello", true},
		{"media cut before its Content-Length", "media-cut", mediaHead("media-cut", "Content-Length: 100\r\n"), "hello", false},
		{"chunked media, whole", "chunked-whole", mediaHead("chunked-whole", "Transfer-Encoding: chunked\r\n"),
			chunk("hello, ") + chunk("world") + "0\r\n\r\n", true},
		{"chunked media cut off", "chunked-cut", mediaHead("chunked-cut", "Transfer-Encoding: chunked\r\n"),
			chunk("hello, ") + "5\r\nwor", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := rawRequest(t, srv, tc.head, tc.body)
			data, got := httpGet(t, srv, tc.object)
			switch {
			case tc.stored && (st != http.StatusOK || got != http.StatusOK):
				t.Fatalf("answered %d, read back %d; want the object stored", st, got)
			case tc.stored && !strings.Contains(tc.body, string(data[:min(len(data), 5)])):
				t.Fatalf("stored %q", data[:min(len(data), 20)])
			case !tc.stored && got != http.StatusNotFound:
				t.Fatalf("answered %d, and the object was stored (read back %d)", st, got)
			case !tc.stored && st != http.StatusBadRequest && st != 0:
				t.Fatalf("answered %d, want 400 or a dropped connection", st)
			}
		})
	}
}

// TestDeadClientDoesNotLockTheSession: a chunk whose client stalls mid-body
// does not hold its session: a status query on another connection is
// answered at once with the bytes persisted, and the stalled chunk, when
// its connection ends, adds nothing.
func TestDeadClientDoesNotLockTheSession(t *testing.T) {
	srv, _ := start(t)
	uri := startJSONSession(t, srv, "stalled")
	u, _ := url.Parse(uri)
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	head := fmt.Sprintf("PUT %s HTTP/1.1\r\nHost: x\r\nContent-Range: bytes 0-%d/*\r\nContent-Length: %d\r\n\r\n", u.RequestURI(), 512<<10-1, 512<<10)
	if _, err := c.Write([]byte(head + strings.Repeat("s", 100<<10))); err != nil {
		t.Fatal(err)
	}
	// The stalled client sends nothing more and keeps its connection.

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, uri, nil)
	req.Header.Set("Content-Range", "bytes */*")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("status query beside a stalled chunk: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusPermanentRedirect || resp.Header.Get("Range") != "" {
		t.Fatalf("status query: %s, Range %q; want 308 and nothing persisted", resp.Status, resp.Header.Get("Range"))
	}
	c.Close()
	// The session takes the whole chunk from a client that resumes.
	req, _ = http.NewRequestWithContext(ctx, http.MethodPut, uri, strings.NewReader("whole"))
	req.Header.Set("Content-Range", "bytes 0-4/5")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("resumed upload: %s", resp.Status)
	}
	if got, st := httpGet(t, srv, "stalled"); st != http.StatusOK || string(got) != "whole" {
		t.Fatalf("stored %q (%d), want %q", got, st, "whole")
	}
}
