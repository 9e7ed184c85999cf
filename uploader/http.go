package uploader

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
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

	"google.golang.org/api/option"
	"google.golang.org/api/option/internaloption"
	htransport "google.golang.org/api/transport/http"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/objup/objup/header"
	"github.com/objup/objup/internal/wire"
)

// HTTPEmulatorEnv names the environment variable that points a client made
// WithHTTP at a GCS emulator's JSON API, as the official client reads it:
// host:port or a URL (http:// or https://), without authentication.
const HTTPEmulatorEnv = "STORAGE_EMULATOR_HOST"

// WithHTTP makes the client upload through the JSON API over HTTP instead of
// gRPC: the same Writer, Upload and UploadMany, buffers and options. An
// object that fits in a chunk goes out as one multipart request (metadata and
// media, streamed from the chunk); a larger one through a resumable session,
// one PUT per window of chunks, resumed from the persisted offset after a
// fault. Credentials and endpoints come from google.golang.org/api's HTTP
// transport (option.WithEndpoint takes the JSON API's base URL, such as
// "https://storage.googleapis.com/storage/v1/"), and STORAGE_EMULATOR_HOST is
// honoured as the official client honours it.
//
// The JSON API carries no per-request checksum: the whole object's CRC32C
// (and MD5, when asked) is sent with the last request, and the service
// verifies it.
func WithHTTP() option.ClientOption {
	return newClientOption(func(c *clientConfig) { c.http = true })
}

// httpTransport sends uploads through the JSON API.
type httpTransport struct {
	hc       *http.Client
	base     string // scheme://host[/prefix] of the JSON API, without /storage/v1
	boundary string // the multipart boundary of one-shot uploads
	closed   atomic.Bool
}

// newHTTPTransport dials the JSON API with google.golang.org/api's HTTP
// transport, with the official client's defaults or the emulator's.
func newHTTPTransport(ctx context.Context, apiOpts []option.ClientOption) (*httpTransport, error) {
	var opts []option.ClientOption
	if host := os.Getenv(HTTPEmulatorEnv); host == "" {
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
				return nil, fmt.Errorf("%s: %w", HTTPEmulatorEnv, err)
			}
			u = p
		}
		u.Path = "storage/v1/"
		opts = []option.ClientOption{
			option.WithoutAuthentication(),
			internaloption.SkipDialSettingsValidation(),
			internaloption.WithDefaultEndpointTemplate(u.String()),
			internaloption.WithDefaultMTLSEndpoint(u.String()),
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

func (t *httpTransport) close() error {
	if !t.closed.Swap(true) {
		t.hc.CloseIdleConnections()
	}
	return nil
}

// uploadURL is the upload endpoint of bucket, with the query q.
func (t *httpTransport) uploadURL(bucket string, q url.Values) string {
	return t.base + "/upload/storage/v1/b/" + url.PathEscape(bucket) + "/o?" + q.Encode()
}

// query returns the upload's query parameters: its type, the preconditions
// and the predefined ACL, as the JSON API takes them.
func (w *Writer) query(uploadType string) url.Values {
	q := url.Values{"uploadType": {uploadType}}
	s := &w.scratch.spec
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

// do makes one attempt of an HTTP request of the upload, bounded by the
// attempt timeout, with the header chain flattened into its headers. The
// response is the caller's to close, with cancel once it is read. (net/http
// may register several callbacks on a request's context, so the attempt
// context of gRPC calls, which takes one, is not used here.)
func (w *Writer) do(method, u string, body io.ReadCloser, size int64, hdr http.Header) (resp *http.Response, cancel context.CancelFunc, err error) {
	t := &w.target
	ctx, stop := context.WithTimeout(t.ctx, w.retry.attemptTimeout())
	defer func() {
		if err != nil {
			stop()
		}
	}()
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
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
	header.SetHTTP(req.Header, t.ctx)
	resp, err = w.c.httpTr.hc.Do(req)
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

// httpCode maps an HTTP status of the JSON API to a gRPC code.
func httpCode(sc int, msg string) codes.Code {
	switch {
	case sc == http.StatusBadRequest && isChecksumMismatch(msg):
		return codes.DataLoss
	case sc == http.StatusBadRequest:
		return codes.InvalidArgument
	case sc == http.StatusUnauthorized:
		return codes.Unauthenticated
	case sc == http.StatusForbidden:
		return codes.PermissionDenied
	case sc == http.StatusNotFound, sc == http.StatusGone:
		return codes.NotFound
	case sc == http.StatusRequestTimeout:
		return codes.DeadlineExceeded
	case sc == http.StatusConflict:
		return codes.Aborted
	case sc == http.StatusPreconditionFailed, sc == http.StatusNotModified:
		return codes.FailedPrecondition
	case sc == http.StatusRequestedRangeNotSatisfiable:
		return codes.OutOfRange
	case sc == http.StatusTooManyRequests:
		return codes.ResourceExhausted
	case sc == 499:
		return codes.Canceled
	case sc == http.StatusNotImplemented:
		return codes.Unimplemented
	case sc == http.StatusBadGateway, sc == http.StatusServiceUnavailable, sc == http.StatusGatewayTimeout:
		return codes.Unavailable
	case sc >= 500:
		return codes.Internal
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

// metadataJSON is the object resource an upload sends: the spec's resource
// and the caller's checksums, in the JSON API's names.
func (w *Writer) metadataJSON(spec *wire.WriteObjectSpec, checksums *wire.ObjectChecksums) []byte {
	o := spec.GetResource()
	m := map[string]any{"name": o.GetName()}
	for k, v := range map[string]string{
		"contentType": o.GetContentType(), "contentEncoding": o.GetContentEncoding(),
		"contentDisposition": o.GetContentDisposition(), "contentLanguage": o.GetContentLanguage(),
		"cacheControl": o.GetCacheControl(), "storageClass": o.GetStorageClass(), "kmsKeyName": o.GetKmsKey(),
	} {
		if v != "" {
			m[k] = v
		}
	}
	if len(o.GetMetadata()) > 0 {
		m["metadata"] = o.GetMetadata()
	}
	if t := o.GetCustomTime(); t != nil {
		m["customTime"] = t.AsTime().Format(time.RFC3339Nano)
	}
	if acl := o.GetAcl(); len(acl) > 0 {
		rules := make([]map[string]string, len(acl))
		for i, a := range acl {
			rules[i] = map[string]string{"entity": a.GetEntity(), "role": a.GetRole()}
		}
		m["acl"] = rules
	}
	if o.GetTemporaryHold() {
		m["temporaryHold"] = true
	}
	if o.EventBasedHold != nil {
		m["eventBasedHold"] = o.GetEventBasedHold()
	}
	if r := o.GetRetention(); r != nil {
		mode := "Unlocked"
		if r.GetMode() == wire.Object_Retention_LOCKED {
			mode = "Locked"
		}
		m["retention"] = map[string]string{"mode": mode, "retainUntilTime": r.GetRetainUntilTime().AsTime().Format(time.RFC3339Nano)}
	}
	if c := o.GetContexts().GetCustom(); len(c) > 0 {
		custom := make(map[string]map[string]string, len(c))
		for k, v := range c {
			custom[k] = map[string]string{"value": v.GetValue()}
		}
		m["contexts"] = map[string]any{"custom": custom}
	}
	if checksums != nil {
		if checksums.Crc32C != nil {
			m["crc32c"] = encodeCRC32C(checksums.GetCrc32C())
		}
		if len(checksums.GetMd5Hash()) > 0 {
			m["md5Hash"] = base64.StdEncoding.EncodeToString(checksums.GetMd5Hash())
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("uploader: object metadata does not encode: %v", err))
	}
	return b
}

// encodeCRC32C is the JSON API's form of a CRC32C: base64 of its 4
// big-endian bytes.
func encodeCRC32C(c uint32) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], c)
	return base64.StdEncoding.EncodeToString(b[:])
}

// hashHeader is the X-Goog-Hash value for the whole object's checksums.
func hashHeader(cs *wire.ObjectChecksums) string {
	var parts []string
	if cs.Crc32C != nil {
		parts = append(parts, "crc32c="+encodeCRC32C(cs.GetCrc32C()))
	}
	if len(cs.GetMd5Hash()) > 0 {
		parts = append(parts, "md5="+base64.StdEncoding.EncodeToString(cs.GetMd5Hash()))
	}
	return strings.Join(parts, ",")
}

// jsonObject is the part of the JSON API's object resource objup reads.
type jsonObject struct {
	Name               string            `json:"name"`
	Bucket             string            `json:"bucket"`
	Generation         int64             `json:"generation,string"`
	Metageneration     int64             `json:"metageneration,string"`
	Size               int64             `json:"size,string"`
	ContentType        string            `json:"contentType"`
	ContentEncoding    string            `json:"contentEncoding"`
	ContentDisposition string            `json:"contentDisposition"`
	ContentLanguage    string            `json:"contentLanguage"`
	CacheControl       string            `json:"cacheControl"`
	StorageClass       string            `json:"storageClass"`
	Metadata           map[string]string `json:"metadata"`
	CRC32C             string            `json:"crc32c"`
	MD5Hash            string            `json:"md5Hash"`
	Etag               string            `json:"etag"`
	TimeCreated        time.Time         `json:"timeCreated"`
	Updated            time.Time         `json:"updated"`
	CustomTime         *time.Time        `json:"customTime"`
	KMSKeyName         string            `json:"kmsKeyName"`
	ACL                []struct {
		Entity string `json:"entity"`
		Role   string `json:"role"`
	} `json:"acl"`
	TemporaryHold  bool  `json:"temporaryHold"`
	EventBasedHold *bool `json:"eventBasedHold"`
	Retention      *struct {
		Mode            string    `json:"mode"`
		RetainUntilTime time.Time `json:"retainUntilTime"`
	} `json:"retention"`
	Contexts *struct {
		Custom map[string]struct {
			Value string `json:"value"`
		} `json:"custom"`
	} `json:"contexts"`
}

// readObject decodes the object resource of a finished upload into the
// storage v2 form the Writer checks.
func readObject(r io.Reader) (*wire.Object, error) {
	var j jsonObject
	if err := json.NewDecoder(r).Decode(&j); err != nil {
		return nil, status.Errorf(codes.Internal, "the service's object resource does not decode: %v", err)
	}
	o := &wire.Object{
		Name: j.Name, Bucket: bucketPrefix + j.Bucket, Generation: j.Generation, Metageneration: j.Metageneration,
		Size: j.Size, ContentType: j.ContentType, ContentEncoding: j.ContentEncoding,
		ContentDisposition: j.ContentDisposition, ContentLanguage: j.ContentLanguage, CacheControl: j.CacheControl,
		StorageClass: j.StorageClass, Metadata: j.Metadata, Etag: j.Etag, KmsKey: j.KMSKeyName,
		TemporaryHold: j.TemporaryHold, EventBasedHold: j.EventBasedHold,
	}
	cs := &wire.ObjectChecksums{}
	if b, err := base64.StdEncoding.DecodeString(j.CRC32C); err == nil && len(b) == 4 {
		crc := binary.BigEndian.Uint32(b)
		cs.Crc32C = &crc
	}
	if b, err := base64.StdEncoding.DecodeString(j.MD5Hash); err == nil && len(b) == 16 {
		cs.Md5Hash = b
	}
	o.Checksums = cs
	if !j.TimeCreated.IsZero() {
		o.CreateTime = timestamppb.New(j.TimeCreated)
	}
	if !j.Updated.IsZero() {
		o.UpdateTime = timestamppb.New(j.Updated)
	}
	if j.CustomTime != nil {
		o.CustomTime = timestamppb.New(*j.CustomTime)
	}
	for _, a := range j.ACL {
		o.Acl = append(o.Acl, &wire.ObjectAccessControl{Entity: a.Entity, Role: a.Role})
	}
	if r := j.Retention; r != nil {
		mode := wire.Object_Retention_UNLOCKED
		if r.Mode == "Locked" {
			mode = wire.Object_Retention_LOCKED
		}
		o.Retention = &wire.Object_Retention{Mode: mode, RetainUntilTime: timestamppb.New(r.RetainUntilTime)}
	}
	if c := j.Contexts; c != nil && len(c.Custom) > 0 {
		o.Contexts = &wire.ObjectContexts{Custom: make(map[string]*wire.ObjectCustomContextPayload, len(c.Custom))}
		for k, v := range c.Custom {
			o.Contexts.Custom[k] = &wire.ObjectCustomContextPayload{Value: v.Value}
		}
	}
	return o, nil
}

// httpBody is a request body over byte slices, chunk memory among them,
// sent without copying them into a buffer of objup's: it implements
// io.WriterTo, which net/http uses. Close drops the holds on the chunks it
// reads; net/http closes a request's body once it no longer reads it, which
// may be after the response arrived.
type httpBody struct {
	parts [][]byte
	holds []*hold
	done  atomic.Bool
}

func (b *httpBody) size() int64 {
	var n int64
	for _, p := range b.parts {
		n += int64(len(p))
	}
	return n
}

// Read implements io.Reader.
func (b *httpBody) Read(p []byte) (int, error) {
	for len(b.parts) > 0 && len(b.parts[0]) == 0 {
		b.parts = b.parts[1:]
	}
	if len(b.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, b.parts[0])
	b.parts[0] = b.parts[0][n:]
	return n, nil
}

// WriteTo implements io.WriterTo: each part goes to w as it is.
func (b *httpBody) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for len(b.parts) > 0 {
		n, err := w.Write(b.parts[0])
		total += int64(n)
		b.parts[0] = b.parts[0][n:]
		if err != nil {
			return total, err
		}
		b.parts = b.parts[1:]
	}
	return total, nil
}

// Close implements io.Closer: the chunks may be reused.
func (b *httpBody) Close() error {
	if b.done.CompareAndSwap(false, true) {
		for _, h := range b.holds {
			h.release()
		}
	}
	return nil
}

// closeResponse drains and closes a response body so its connection can be
// reused.
func closeResponse(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// bodyOver returns a request body over r.Data[from-r.Offset:] for each of
// rs, holding a reference on each chunk until net/http is done with it, with
// prefix and suffix around it.
func (w *Writer) bodyOver(prefix []byte, rs []*chunkRef, from int64, suffix []byte) *httpBody {
	b := &httpBody{}
	if len(prefix) > 0 {
		b.parts = append(b.parts, prefix)
	}
	for _, r := range rs {
		if r.end() <= from {
			continue
		}
		data := r.Data[max(from-r.Offset, 0):]
		if len(data) == 0 {
			continue
		}
		b.parts = append(b.parts, data)
		b.holds = append(b.holds, w.life.hold(r))
	}
	if len(suffix) > 0 {
		b.parts = append(b.parts, suffix)
	}
	return b
}

var errNoLocation = errors.New("the service started a resumable upload without a Location")

// multipartBody frames metadata and the media for a multipart upload.
func (t *httpTransport) multipartBody(meta []byte, contentType string) (prefix, suffix []byte) {
	var p bytes.Buffer
	p.WriteString("--" + t.boundary + "\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n")
	p.Write(meta)
	p.WriteString("\r\n--" + t.boundary + "\r\nContent-Type: " + contentType + "\r\n\r\n")
	return p.Bytes(), []byte("\r\n--" + t.boundary + "--\r\n")
}
