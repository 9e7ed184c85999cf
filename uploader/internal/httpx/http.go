package httpx

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/objup/objup/uploader/internal/xfer"

	"google.golang.org/api/option"
	"google.golang.org/api/option/internaloption"
	htransport "google.golang.org/api/transport/http"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/header"
	"github.com/objup/objup/internal/httpcode"
)

// httpEmulatorEnv names the environment variable that points a client made
// WithHTTP at a GCS emulator's JSON API, as the official client reads it:
// host:port or a URL (http:// or https://), without authentication.
const httpEmulatorEnv = "STORAGE_EMULATOR_HOST"

// httpTransport sends uploads through the JSON API.
type httpTransport struct {
	hc       *http.Client
	base     string // scheme://host[/prefix] of the JSON API, without /storage/v1
	boundary string // the multipart boundary of one-shot uploads
	closed   atomic.Bool
}

// newHTTPTransport dials the JSON API with google.golang.org/api's HTTP
// transport, with the official client's defaults or the emulator's.
// maxIdleHTTP bounds the idle connections an emulator client keeps: as
// many as the most requests it had in flight at once, up to this.
const maxIdleHTTP = 4096

// emulatorTransport is the HTTP transport of a client pointed at an
// emulator with httpEmulatorEnv. An emulator speaks plain HTTP/1.1, one
// request per connection at a time, so google.golang.org/api's transport,
// which keeps at most 100 idle connections per host, would close and
// redial connections for every upload past the hundredth in flight; this
// one keeps them (HTTPS endpoints use HTTP/2, which multiplexes).
func emulatorTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = maxIdleHTTP, maxIdleHTTP
	return t
}

// New returns the JSON API transport, made with google.golang.org/api's
// HTTP transport from apiOpts (or for the emulator STORAGE_EMULATOR_HOST
// names).
func New(ctx context.Context, apiOpts []option.ClientOption) (xfer.Transport, error) {
	var opts []option.ClientOption
	if host := os.Getenv(httpEmulatorEnv); host == "" {
		opts = []option.ClientOption{
			option.WithScopes("https://www.googleapis.com/auth/devstorage.full_control", "https://www.googleapis.com/auth/cloud-platform"),
			internaloption.WithDefaultEndpointTemplate("https://storage.UNIVERSE_DOMAIN/storage/v1/"),
			internaloption.WithDefaultMTLSEndpoint("https://storage.mtls.googleapis.com/storage/v1/"),
			internaloption.WithDefaultUniverseDomain("googleapis.com"),
			internaloption.EnableNewAuthLibrary(),
		}
	} else {
		u := &url.URL{Scheme: "http", Host: host}
		if strings.Contains(host, "://") {
			p, err := url.Parse(host)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", httpEmulatorEnv, err)
			}
			u = p
		}
		u.Path = "storage/v1/"
		opts = []option.ClientOption{
			option.WithoutAuthentication(),
			internaloption.SkipDialSettingsValidation(),
			internaloption.WithDefaultEndpointTemplate(u.String()),
			internaloption.WithDefaultMTLSEndpoint(u.String()),
			option.WithHTTPClient(&http.Client{Transport: emulatorTransport()}),
		}
	}
	opts = append(opts, option.WithTelemetryDisabled())
	hc, endpoint, err := htransport.NewClient(ctx, append(opts, apiOpts...)...)
	if err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(strings.TrimSuffix(endpoint, "/"), "/storage/v1")
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	return &httpTransport{hc: hc, base: base, boundary: "objup" + hex.EncodeToString(b[:])}, nil
}

func (t *httpTransport) Names() *xfer.CallNames { return &httpNames }

func (t *httpTransport) Close() error {
	if !t.closed.Swap(true) {
		t.hc.CloseIdleConnections()
	}
	return nil
}

// uploadURL is the upload endpoint of bucket, with the query q.
func (t *httpTransport) uploadURL(bucket string, q url.Values) string {
	return t.base + "/upload/storage/v1/b/" + url.PathEscape(bucket) + "/o?" + q.Encode()
}

// objectURL is the JSON API's resource of object name in bucket.
func (t *httpTransport) objectURL(bucket, name string) string {
	return t.base + "/storage/v1/b/" + url.PathEscape(bucket) + "/o/" + url.PathEscape(name)
}

// query returns the upload's query parameters: its type, the preconditions
// and the predefined ACL, as the JSON API takes them.
func query(u *xfer.Request, uploadType string) url.Values {
	q := url.Values{"uploadType": {uploadType}}
	s := u.Spec()
	for _, p := range []struct {
		name string
		v    *int64
	}{
		{"ifGenerationMatch", s.IfGenerationMatch},
		{"ifGenerationNotMatch", s.IfGenerationNotMatch},
		{"ifMetagenerationMatch", s.IfMetagenerationMatch},
		{"ifMetagenerationNotMatch", s.IfMetagenerationNotMatch},
	} {
		if p.v != nil {
			q.Set(p.name, strconv.FormatInt(*p.v, 10))
		}
	}
	if s.PredefinedAcl != "" {
		q.Set("predefinedAcl", s.PredefinedAcl)
	}
	return q
}

// do makes one attempt of an HTTP request of upload u, in ctx (the
// upload's, or a stream's) and bounded by timeout, with the header chain
// flattened into its headers. The response is the caller's to close, with
// cancel once it is read. (net/http may register several callbacks on a
// request's context, so the attempt context of gRPC calls, which takes one,
// is not used here.) It touches nothing of the upload's but its target, so
// it may run off the Writer's goroutine.
func (t *httpTransport) do(ctx context.Context, u *xfer.Request, timeout time.Duration, method, url string, body io.ReadCloser, size int64, hdr http.Header) (resp *http.Response, cancel context.CancelFunc, err error) {
	ctx, stop := context.WithTimeout(ctx, timeout)
	defer func() {
		if err != nil {
			stop()
		}
	}()
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		if body != nil {
			body.Close()
		}
		return nil, nil, err
	}
	switch {
	case body != nil && size > 0:
		req.Body, req.ContentLength = body, size
	case body != nil:
		body.Close()
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	header.SetHTTP(u.Ctx, req.Header)
	resp, err = t.hc.Do(req)
	if err != nil {
		return nil, nil, httpError(err)
	}
	return resp, stop, nil
}

// httpError turns a failed HTTP exchange into a gRPC status error, so one
// classification serves both transports: a network failure is UNAVAILABLE,
// the attempt's deadline DEADLINE_EXCEEDED.
func httpError(err error) error {
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// The attempt's deadline, or the upload's context (the retrier
		// tells them apart by the upload's context).
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.As(err, &ne) && ne.Timeout():
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	return status.Error(codes.Unavailable, err.Error())
}

// statusError reads a failed response into a gRPC status error with the
// code the HTTP status means.
func statusError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	msg := strings.TrimSpace(string(body))
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		msg = e.Error.Message
	}
	msg = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, msg)
	return status.Error(httpCode(resp.StatusCode, msg), msg)
}

// httpCode maps an HTTP status of the JSON API to a gRPC code, with what an
// upload's answer adds: a 400 that reports a checksum mismatch is DataLoss,
// and a 304 answers an ifGenerationNotMatch or ifMetagenerationNotMatch that
// did not hold.
func httpCode(sc int, msg string) codes.Code {
	switch {
	case sc == http.StatusBadRequest && isChecksumMismatch(msg):
		return codes.DataLoss
	case sc == http.StatusNotModified:
		return codes.FailedPrecondition
	}
	if c := httpcode.Code(sc); c != codes.OK {
		return c
	}
	return codes.Unknown
}

// isChecksumMismatch tells the JSON API's answer to a wrong CRC32C or MD5,
// a 400 whose message says the checksums do not match.
func isChecksumMismatch(msg string) bool {
	m := strings.ToLower(msg)
	return (strings.Contains(m, "crc32c") || strings.Contains(m, "md5") || strings.Contains(m, "checksum") || strings.Contains(m, "hash")) &&
		(strings.Contains(m, "match") || strings.Contains(m, "mismatch"))
}

// httpNames are the names of the JSON API calls.
var httpNames = xfer.CallNames{Write: "objects.insert", Start: "objects.insert", Query: "objects.insert (status)", Stream: "objects.insert", Compose: "objects.compose", Delete: "objects.delete"}
