package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/objup/objup/fakes"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Started by an init function of go.opencensus.io, linked in
		// through the fakes package's dependencies; it lives as long as
		// the process.
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
	)
}

// syncBuffer is a bytes.Buffer safe for the recorder's writes and the
// test's read, which signals each write on wrote: the recorder writes an
// exchange once the response is complete, which may be after the client
// read it.
type syncBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{}
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() { s.wrote <- struct{}{} }()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRecorder sends requests through the recording proxy to a fake and
// checks each recorded exchange: the request as sent (the API key
// scrubbed), the fake's status and headers, and the response body whole
// when small, else its length and SHA-256.
func TestRecorder(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket("rec-bucket"))
	target, _ := url.Parse(srv.HTTPURL())
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	out := &syncBuffer{wrote: make(chan struct{}, 1)}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	proxy := &http.Server{Handler: newRecorder(target, tr, out), ReadHeaderTimeout: 10 * time.Second}
	go proxy.Serve(lis)
	defer proxy.Shutdown(context.Background())
	base := "http://" + lis.Addr().String()

	small := []byte("small content")
	large := bytes.Repeat([]byte("0123456789abcdef"), maxBody/16+1)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	for _, tc := range []struct {
		name, method, uri string
		body              []byte
		status            int
		wantURI           string
		respWhole         bool // the response body recorded whole
		respContent       []byte
	}{
		{"upload, with an API key", "POST", "/upload/storage/v1/b/rec-bucket/o?uploadType=media&name=s&key=AIza-secret", small,
			http.StatusOK, "/upload/storage/v1/b/rec-bucket/o?uploadType=media&name=s&key=KEY", true, nil},
		{"small read", "GET", "/storage/v1/b/rec-bucket/o/s?alt=media", nil,
			http.StatusOK, "/storage/v1/b/rec-bucket/o/s?alt=media", true, small},
		{"large upload", "POST", "/upload/storage/v1/b/rec-bucket/o?uploadType=media&name=l", large,
			http.StatusOK, "/upload/storage/v1/b/rec-bucket/o?uploadType=media&name=l", true, nil},
		{"large read", "GET", "/storage/v1/b/rec-bucket/o/l?alt=media", nil,
			http.StatusOK, "/storage/v1/b/rec-bucket/o/l?alt=media", false, large},
		{"missing", "GET", "/storage/v1/b/rec-bucket/o/none", nil,
			http.StatusNotFound, "/storage/v1/b/rec-bucket/o/none", true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := strings.Count(out.String(), "\n")
			req, err := http.NewRequest(tc.method, base+tc.uri, bytes.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("X-Test", tc.name)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, got)
			}
			select {
			case <-out.wrote:
			case <-time.After(30 * time.Second):
				t.Fatal("no exchange recorded within 30 s")
			}
			sc := bufio.NewScanner(strings.NewReader(out.String()))
			sc.Buffer(nil, 1<<20)
			var x *Exchange
			for i := 0; sc.Scan(); i++ {
				if i == before {
					x = new(Exchange)
					if err := json.Unmarshal(sc.Bytes(), x); err != nil {
						t.Fatal(err)
					}
				}
			}
			if x == nil {
				t.Fatalf("no exchange recorded after %d", before)
			}
			sum := sha256.Sum256(got)
			switch {
			case x.Method != tc.method || x.URI != tc.wantURI || x.Header.Get("X-Test") != tc.name || !bytes.Equal(x.Body, tc.body):
				t.Fatalf("recorded request %s %s (X-Test %q, %d bytes)", x.Method, x.URI, x.Header.Get("X-Test"), len(x.Body))
			case x.Status != tc.status || x.RespHeader.Get("Content-Type") != resp.Header.Get("Content-Type"):
				t.Fatalf("recorded status %d, headers %v", x.Status, x.RespHeader)
			case x.RespLen != int64(len(got)) || x.RespSHA256 != hex.EncodeToString(sum[:]):
				t.Fatalf("recorded %d bytes, SHA-256 %s; got %d", x.RespLen, x.RespSHA256, len(got))
			case tc.respWhole != (x.RespBody != nil) || tc.respWhole && !bytes.Equal(x.RespBody, got):
				t.Fatalf("recorded body %d bytes, want it whole: %v", len(x.RespBody), tc.respWhole)
			case tc.respContent != nil && !bytes.Equal(got, tc.respContent):
				t.Fatalf("content through the proxy: %d bytes", len(got))
			}
		})
	}
}
