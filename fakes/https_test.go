package fakes_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/objup/objup/fakes"
)

// TestHTTPS serves the JSON API over HTTPS with the certificate the
// server made: a client that trusts CertPEM uploads through a resumable
// session whose URI is an https one, over HTTP/1.1 and HTTP/2, and reads
// the object back over the plain HTTP port; a client that does not trust
// it is refused.
func TestHTTPS(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket(bucket), fakes.WithHTTPSAddr(fakes.DefaultAddr))
	if !strings.HasPrefix(srv.HTTPSURL(), "https://127.0.0.1:") {
		t.Fatalf("HTTPSURL %q", srv.HTTPSURL())
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(srv.CertPEM()) {
		t.Fatalf("CertPEM %q is no certificate", srv.CertPEM())
	}
	for _, tc := range []struct {
		name  string
		h2    bool
		proto string
	}{
		{"HTTP/1.1", false, "HTTP/1.1"},
		{"HTTP/2", true, "HTTP/2.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: tc.h2}
			if !tc.h2 {
				tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
			}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr}
			name := "tls-" + tc.name
			send := func(method, url, body string, hdr ...string) *http.Response {
				t.Helper()
				req, err := http.NewRequestWithContext(ctxT(t), method, url, strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				for i := 0; i+1 < len(hdr); i += 2 {
					req.Header.Set(hdr[i], hdr[i+1])
				}
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.Proto != tc.proto {
					t.Fatalf("%s %s: protocol %s, want %s", method, url, resp.Proto, tc.proto)
				}
				return resp
			}
			resp := send("POST", srv.HTTPSURL()+"/resumable/upload/storage/v1/b/"+bucket+"/o?uploadType=resumable", `{"name":"`+name+`"}`, "Content-Type", "application/json")
			loc := resp.Header.Get("Location")
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(loc, srv.HTTPSURL()+"/upload/storage/v1/") {
				t.Fatalf("start: %d, Location %q", resp.StatusCode, loc)
			}
			if resp := send("PUT", loc, "over tls", "Content-Range", "bytes 0-7/8"); resp.StatusCode != http.StatusOK {
				t.Fatalf("upload: %d", resp.StatusCode)
			}
			if got := do(t, srv, "GET", objPath(name)+"?alt=media", nil); !bytes.Equal(got.body, []byte("over tls")) {
				t.Fatalf("content %q", got.body)
			}
		})
	}
	untrusted := &http.Transport{}
	defer untrusted.CloseIdleConnections()
	if resp, err := (&http.Client{Transport: untrusted}).Get(srv.HTTPSURL() + "/storage/v1/b/" + bucket); err == nil {
		resp.Body.Close()
		t.Fatal("a client that does not trust the certificate got an answer")
	}
}

// TestNoHTTPS checks that a server has no HTTPS port unless asked.
func TestNoHTTPS(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket(bucket))
	if srv.HTTPSURL() != "" || srv.CertPEM() != nil {
		t.Fatalf("HTTPSURL %q, CertPEM %q without WithHTTPSAddr", srv.HTTPSURL(), srv.CertPEM())
	}
}
