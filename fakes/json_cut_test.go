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
	multipartHeadChunked := fmt.Sprintf("POST /upload/storage/v1/b/%s/o?uploadType=multipart HTTP/1.1\r\nHost: x\r\n"+
		"Content-Type: multipart/related; boundary=%s\r\nTransfer-Encoding: chunked\r\n", bucket, boundary)
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
		// The closing delimiter came, but not the end of the request.
		{"multipart whole, cut before its Content-Length", "mp-short", multipartHead(len(multipart("mp-short", "\r\n--"+boundary+"--\r\n")) + 100),
			multipart("mp-short", "\r\n--"+boundary+"--\r\n"), false},
		{"chunked multipart whole, without its last chunk", "mp-chunked", multipartHeadChunked,
			chunk(multipart("mp-chunked", "\r\n--"+boundary+"--\r\n")), false},
		{"chunked multipart, whole", "mp-chunked-whole", multipartHeadChunked,
			chunk(multipart("mp-chunked-whole", "\r\n--"+boundary+"--\r\n")) + "0\r\n\r\n", true},
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

// TestCutShortChunks: a chunk of a resumable session whose request ends
// early (before its Content-Length, a chunked body cut off, even one cut
// after the bytes its Content-Range announced) never completes the upload:
// the session keeps what arrived in whole 256 KiB units of the object, as
// GCS does, short of the object's end, and a status query reports them; the
// client resumes from there and the object has the right bytes.
func TestCutShortChunks(t *testing.T) {
	srv, _ := start(t)
	const q = 256 << 10
	for i, tc := range []struct {
		name    string
		before  int  // bytes the session holds before the chunk
		first   int  // the chunk's first byte
		n       int  // the chunk's length, by its Content-Range
		total   int  // the object's size
		final   bool // the Content-Range names the total, else "*"
		chunked bool // Transfer-Encoding: chunked, else Content-Length
		sent    int  // bytes of the chunk sent before the request ends
		want    int  // bytes the session keeps
	}{
		{"whole object in one chunk, cut at 60 KiB of 100 KiB", 0, 0, 100 << 10, 100 << 10, true, false, 60 << 10, 0},
		{"final chunk, cut after 700 KiB", q, q, mib, q + mib, true, false, 700 << 10, 3 * q},
		{"chunk of 3 MiB, cut after 2 MiB and 300 KiB", 0, 0, 3 * mib, 3 * mib, false, false, 2*mib + 300<<10, 2*mib + q},
		{"retried chunk over persisted bytes, cut", 2 * q, q, mib, q + mib, false, false, 600 << 10, 3 * q},
		{"chunked final chunk, cut off", 0, 0, mib, mib, true, true, 600 << 10, 2 * q},
		{"chunked final chunk, all its bytes but not its last chunk", 0, 0, 5, 5, true, true, 5, 0},
		{"chunked final chunk of 512 KiB, all its bytes but not its last chunk", 0, 0, 2 * q, 2 * q, true, true, 2 * q, q},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("cut-chunk-%d", i)
			data := payload(tc.total, byte(i))
			uri := startJSONSession(t, srv, name)
			if tc.before > 0 {
				r := do(t, srv, "PUT", uri, data[:tc.before], "Content-Range", fmt.Sprintf("bytes 0-%d/*", tc.before-1))
				if r.status != http.StatusPermanentRedirect {
					t.Fatalf("first chunk: %d %s", r.status, r.body)
				}
			}
			u, _ := url.Parse(uri)
			total := "*"
			if tc.final {
				total = fmt.Sprint(tc.total)
			}
			head := fmt.Sprintf("PUT %s HTTP/1.1\r\nHost: x\r\nContent-Range: bytes %d-%d/%s\r\n", u.RequestURI(), tc.first, tc.first+tc.n-1, total)
			body := string(data[tc.first : tc.first+tc.sent])
			if tc.chunked {
				head += "Transfer-Encoding: chunked\r\n"
				body = fmt.Sprintf("%x\r\n", tc.n) + body
				if tc.sent == tc.n {
					body += "\r\n"
				}
			} else {
				head += fmt.Sprintf("Content-Length: %d\r\n", tc.n)
			}
			if st := rawRequest(t, srv, head, body); st != http.StatusBadRequest && st != 0 {
				t.Fatalf("the cut chunk: answered %d, want 400 or a dropped connection", st)
			}
			if _, st := httpGet(t, srv, name); st != http.StatusNotFound {
				t.Fatalf("the object was stored (read back %d)", st)
			}
			r := do(t, srv, "PUT", uri, nil, "Content-Range", "bytes */*")
			want := ""
			if tc.want > 0 {
				want = fmt.Sprintf("bytes=0-%d", tc.want-1)
			}
			if r.status != http.StatusPermanentRedirect || r.header.Get("Range") != want {
				t.Fatalf("status query: %d, Range %q; want 308, Range %q", r.status, r.header.Get("Range"), want)
			}
			r = do(t, srv, "PUT", uri, data[tc.want:], "Content-Range", fmt.Sprintf("bytes %d-%d/%d", tc.want, tc.total-1, tc.total))
			if r.status != http.StatusOK {
				t.Fatalf("resumed from byte %d: %d %s", tc.want, r.status, r.body)
			}
			got, st := httpGet(t, srv, name)
			if st != http.StatusOK {
				t.Fatalf("read back: %d", st)
			}
			sameBytes(t, name, got, data)
		})
	}
	t.Run("chunked chunk longer than its Content-Range", func(t *testing.T) {
		uri := startJSONSession(t, srv, "long-chunk")
		u, _ := url.Parse(uri)
		head := fmt.Sprintf("PUT %s HTTP/1.1\r\nHost: x\r\nContent-Range: bytes 0-4/5\r\nTransfer-Encoding: chunked\r\n", u.RequestURI())
		if st := rawRequest(t, srv, head, "a\r\nhello, you\r\n0\r\n\r\n"); st != http.StatusBadRequest {
			t.Fatalf("answered %d, want 400", st)
		}
		if _, st := httpGet(t, srv, "long-chunk"); st != http.StatusNotFound {
			t.Fatalf("the object was stored (read back %d)", st)
		}
		if r := do(t, srv, "PUT", uri, nil, "Content-Range", "bytes */*"); r.status != http.StatusPermanentRedirect || r.header.Get("Range") != "" {
			t.Fatalf("status query: %d, Range %q; want 308 and nothing persisted", r.status, r.header.Get("Range"))
		}
	})
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
