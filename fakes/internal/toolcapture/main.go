// Command toolcapture is a recording proxy for fakegcs: it forwards every
// request to the fake and appends the exchange (the request's method, URI,
// headers and body; the response's status, headers and body, or the
// body's length and SHA-256 when it is large) to a file of JSON lines, one
// per exchange, in the order the responses completed (the value of an
// API key parameter replaced by "KEY"). A request that
// depends on an earlier answer (a session URI, a generation) therefore
// comes after it. conformance/gcloud.sh -capture puts it in front of
// fakegcs to record what gcloud storage and gsutil send, which the fakes
// package's TestToolSessions replays.
//
// Usage:
//
//	toolcapture -target URL -out FILE [-tls -cert FILE -target-ca FILE]
//
// It listens on a free loopback port and prints "listen URL" once it does.
// With -tls it serves HTTPS with a certificate it makes and writes to
// -cert, and trusts the target's certificate in -target-ca. It runs until
// SIGINT or SIGTERM.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/objup/objup/fakes/internal/api"
)

// Exchange is one recorded request and its response.
type Exchange struct {
	Method     string      `json:"method"`
	URI        string      `json:"uri"`
	Header     http.Header `json:"header"`
	Body       []byte      `json:"body,omitempty"`
	Status     int         `json:"status"`
	RespHeader http.Header `json:"respHeader"`
	RespBody   []byte      `json:"respBody,omitempty"` // when at most maxBody bytes
	RespLen    int64       `json:"respLen"`
	RespSHA256 string      `json:"respSHA256"`
}

// maxBody is the largest response body recorded whole.
const maxBody = 64 << 10

func main() {
	target := flag.String("target", "", "`URL` of the fake")
	out := flag.String("out", "", "append the exchanges to `file`")
	useTLS := flag.Bool("tls", false, "serve HTTPS")
	certFile := flag.String("cert", "", "with -tls, write the certificate served to `file`")
	targetCA := flag.String("target-ca", "", "trust the target's certificate in `file`")
	flag.Parse()
	if err := run(*target, *out, *useTLS, *certFile, *targetCA); err != nil {
		fmt.Fprintln(os.Stderr, "toolcapture:", err)
		os.Exit(1)
	}
}

func run(target, out string, useTLS bool, certFile, targetCA string) error {
	u, err := url.Parse(target)
	if err != nil || u.Host == "" || out == "" {
		return fmt.Errorf("need -target URL and -out FILE")
	}
	f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if targetCA != "" {
		pem, err := os.ReadFile(targetCA)
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	}
	h := newRecorder(u, tr, f)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	scheme := "http"
	if useTLS {
		cert, pem, err := api.SelfSignedCert("127.0.0.1", time.Now())
		if err != nil {
			return err
		}
		if err := os.WriteFile(certFile, pem, 0o644); err != nil {
			return err
		}
		lis = tls.NewListener(lis, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}})
		scheme = "https"
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	fmt.Printf("listen %s://%s\n", scheme, api.DialAddr(lis.Addr()))
	if err := srv.Serve(lis); err != http.ErrServerClosed {
		return err
	}
	return nil
}

// newRecorder returns the proxy: it forwards each request to target
// through tr and writes the exchange to out as one JSON line, once the
// response is complete. It is safe for concurrent use.
func newRecorder(target *url.URL, tr http.RoundTripper, out io.Writer) http.Handler {
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = tr
	var mu sync.Mutex
	enc := json.NewEncoder(out)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		x := &Exchange{Method: r.Method, URI: scrubKey(r.URL), Header: r.Header.Clone(), Body: body}
		rec := &recorder{ResponseWriter: w, sum: sha256.New()}
		rp.ServeHTTP(rec, r)
		x.Status, x.RespHeader, x.RespLen = rec.status, w.Header().Clone(), rec.n
		if x.Status == 0 {
			x.Status = http.StatusOK
		}
		if rec.n <= maxBody {
			x.RespBody = rec.buf.Bytes()
		}
		x.RespSHA256 = hex.EncodeToString(rec.sum.Sum(nil))
		mu.Lock()
		enc.Encode(x)
		mu.Unlock()
	})
}

// scrubKey returns u's request URI with the value of its key parameter
// (the API key gsutil sends with every request) replaced by "KEY", so that
// a recording holds no key; the fake ignores the parameter.
func scrubKey(u *url.URL) string {
	uri := u.RequestURI()
	if k := u.Query().Get("key"); k != "" {
		uri = strings.ReplaceAll(uri, "key="+url.QueryEscape(k), "key=KEY")
	}
	return uri
}

// recorder passes a response through and keeps its status, length, hash
// and first maxBody bytes.
type recorder struct {
	http.ResponseWriter
	status int
	n      int64
	buf    bytes.Buffer
	sum    hash.Hash
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if r.n+int64(len(p)) <= maxBody {
		r.buf.Write(p)
	}
	r.n += int64(len(p))
	r.sum.Write(p)
	return r.ResponseWriter.Write(p)
}

// Flush lets streamed responses through.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
