package httpx

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	mimemultipart "mime/multipart"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/api/option"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/xfer"
)

// The JSON API transport on its own, against an httptest.Server that each
// test scripts: a failure here is the transport's.

// jsonService is a scripted JSON API: a multipart upload answers fail (0:
// the object), a resumable session's PUTs answer putFail (0: the
// persisted range, or the object once its size is known). It records what
// it received.
type jsonService struct {
	fail, putFail int

	mu      sync.Mutex
	query   string // the last upload's query
	meta    string // the multipart upload's metadata
	content []byte
	hash    string // the last PUT's X-Goog-Hash
}

func (s *jsonService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && r.URL.Query().Get("uploadType") == "multipart":
		s.query = r.URL.RawQuery
		if s.fail != 0 {
			http.Error(w, `{"error":{"message":"scripted"}}`, s.fail)
			return
		}
		_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mr := mimemultipart.NewReader(r.Body, params["boundary"])
		for i := 0; ; i++ {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			b, _ := io.ReadAll(p)
			if i == 0 {
				s.meta = string(b)
			} else {
				s.content = b
			}
		}
		s.object(w, http.StatusOK)
	case r.Method == http.MethodPost && r.URL.Query().Get("uploadType") == "resumable":
		s.query = r.URL.RawQuery
		w.Header().Set("Location", "http://"+r.Host+"/session/1")
	case r.Method == http.MethodPut && r.URL.Path == "/session/1":
		s.put(w, r)
	default:
		http.NotFound(w, r)
	}
}

// put takes a PUT of the session: data at a Content-Range, or a status
// query (bytes */total).
func (s *jsonService) put(w http.ResponseWriter, r *http.Request) {
	if s.putFail != 0 {
		http.Error(w, `{"error":{"message":"scripted"}}`, s.putFail)
		return
	}
	cr := strings.TrimPrefix(r.Header.Get("Content-Range"), "bytes ")
	span, total, _ := strings.Cut(cr, "/")
	if span != "*" {
		from, _, _ := strings.Cut(span, "-")
		off, _ := strconv.Atoi(from)
		b, _ := io.ReadAll(r.Body)
		s.content = append(s.content[:off], b...)
		s.hash = r.Header.Get("X-Goog-Hash")
	}
	if n, err := strconv.Atoi(total); err == nil && n == len(s.content) {
		s.object(w, http.StatusOK)
		return
	}
	if len(s.content) > 0 {
		w.Header().Set("Range", fmt.Sprintf("bytes=0-%d", len(s.content)-1))
	}
	w.WriteHeader(http.StatusPermanentRedirect)
}

// object answers with the object of the content received.
func (s *jsonService) object(w http.ResponseWriter, code int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"name":"o","bucket":"b","size":"%d","generation":"5"}`, len(s.content))
}

// newTransport returns the JSON API transport to s.
func newTransport(t *testing.T, s *jsonService) xfer.Transport {
	t.Helper()
	t.Setenv(httpEmulatorEnv, "")
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	tr, err := New(context.Background(), []option.ClientOption{
		option.WithEndpoint(srv.URL + "/storage/v1/"), option.WithoutAuthentication(), option.WithHTTPClient(srv.Client())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// testAlloc gives buffers and counts those out.
type testAlloc struct {
	mu  sync.Mutex
	out int
}

func (a *testAlloc) Get(context.Context) (*[]byte, error) {
	a.mu.Lock()
	a.out++
	a.mu.Unlock()
	b := make([]byte, 256<<10)
	return &b, nil
}

func (a *testAlloc) Put(*[]byte) {
	a.mu.Lock()
	a.out--
	a.mu.Unlock()
}

func (a *testAlloc) BufferSize() int { return 256 << 10 }

// newUpload returns the request of an upload of gs://b/o and data's chunk
// in it, with the object's CRC32C to send.
func newUpload(a *testAlloc, data []byte) (*xfer.Request, *xfer.ChunkRef) {
	u := &xfer.Request{Target: xfer.Target{Ctx: context.Background(), Bucket: "b", Object: "o", Params: "bucket=" + xfer.BucketPrefix + "b"}}
	u.Scratch.Spec.Resource = &u.Scratch.Object
	u.Scratch.Object.Name, u.Scratch.Object.ContentType = "o", "text/plain"
	u.Life.Alloc = a
	b, _ := a.Get(context.Background())
	n := copy(*b, data)
	u.Scratch.CRC = crc32c.Checksum(data)
	u.Scratch.Checksums.Crc32C = &u.Scratch.CRC
	u.Scratch.HasSums = true
	return u, u.Life.NewRef(chunker.Chunk{Buf: b, Data: (*b)[:n], CRC32C: u.Scratch.CRC})
}

// payload returns n bytes of a pattern.
func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*11 + i/239)
	}
	return b
}

// TestWriteObjectJSON: a one-shot write is one multipart upload carrying
// the object's metadata (with its checksums) and its bytes, with the
// preconditions in the query; the service's refusals are their codes.
func TestWriteObjectJSON(t *testing.T) {
	for _, tc := range []struct {
		name         string
		fail         int
		ifGeneration bool
		code         codes.Code
	}{
		{name: "stored"},
		{name: "stored if new", ifGeneration: true},
		{name: "forbidden", fail: http.StatusForbidden, code: codes.PermissionDenied},
		{name: "precondition failed", fail: http.StatusPreconditionFailed, ifGeneration: true, code: codes.FailedPrecondition},
		{name: "unavailable", fail: http.StatusServiceUnavailable, code: codes.Unavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &jsonService{fail: tc.fail}
			tr := newTransport(t, s)
			a := new(testAlloc)
			data := payload(5000)
			u, r := newUpload(a, data)
			if tc.ifGeneration {
				u.Scratch.Spec.IfGenerationMatch = new(int64)
			}
			o, sent, err := tr.WriteObject(u, []*xfer.ChunkRef{r}, 10*time.Second)
			r.Unref()
			u.Life.Wait()
			if status.Code(err) != tc.code || !sent {
				t.Fatalf("WriteObject: %v (sent %v), want code %v", err, sent, tc.code)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if got := strings.Contains(s.query, "ifGenerationMatch=0"); got != tc.ifGeneration {
				t.Fatalf("query %q: precondition %v, want %v", s.query, got, tc.ifGeneration)
			}
			if a.out != 0 {
				t.Fatalf("%d buffers not given back", a.out)
			}
			if tc.code != codes.OK {
				return
			}
			if o.GetSize() != int64(len(data)) || o.GetGeneration() != 5 || !bytes.Equal(s.content, data) {
				t.Fatalf("object %v, %d bytes stored; want %d", o, len(s.content), len(data))
			}
			if !strings.Contains(s.meta, `"name":"o"`) || !strings.Contains(s.meta, "crc32c") {
				t.Fatalf("metadata %s, want the object's name and CRC32C", s.meta)
			}
		})
	}
}

// testSink is where a stream reports.
type testSink struct {
	mu        sync.Mutex
	persisted int64
	o         *wire.Object
	broke     error
	reported  chan struct{}
}

func (k *testSink) Ack(persisted int64, o *wire.Object, _ []byte) error {
	k.mu.Lock()
	k.persisted, k.o = persisted, o
	k.mu.Unlock()
	k.Signal()
	return nil
}

func (k *testSink) Broke(err error) {
	k.mu.Lock()
	k.broke = err
	k.mu.Unlock()
	k.Signal()
}

func (k *testSink) Signal() {
	select {
	case k.reported <- struct{}{}:
	default:
	}
}

// TestSessionJSON: a resumable session's start (the session's URI), its
// PUT of the data with the total and the object's hash, the object it
// answers with, a PUT the service refuses (reported to the sink), and a
// status query.
func TestSessionJSON(t *testing.T) {
	const size = 100 << 10
	for _, tc := range []struct {
		name    string
		putFail int
		code    codes.Code
	}{
		{name: "finished"},
		{name: "PUT refused", putFail: http.StatusServiceUnavailable, code: codes.Unavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &jsonService{putFail: tc.putFail}
			tr := newTransport(t, s)
			a := new(testAlloc)
			data := payload(size)
			u, r := newUpload(a, data)
			uri, err := tr.StartUpload(u, 10*time.Second)
			if err != nil || !strings.HasSuffix(uri, "/session/1") {
				t.Fatalf("StartUpload: %q, %v", uri, err)
			}
			sink := &testSink{reported: make(chan struct{}, 1)}
			st, err := tr.OpenStream(u, uri, xfer.NoRoute, 0, sink, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Send(xfer.Pushed{Last: size, Final: true, Window: 2 * size, Timeout: 10 * time.Second}, []*xfer.ChunkRef{r}, true); err != nil {
				t.Fatal(err)
			}
			timeout := time.After(10 * time.Second)
			for done := false; !done; {
				sink.mu.Lock()
				done = sink.o != nil || sink.broke != nil
				sink.mu.Unlock()
				if !done {
					select {
					case <-sink.reported:
					case <-timeout:
						t.Fatal("no report from the stream")
					}
				}
			}
			_ = st.Teardown(nil)
			sink.mu.Lock()
			o, broke := sink.o, sink.broke
			sink.mu.Unlock()
			switch {
			case tc.code == codes.OK && o.GetSize() != size:
				t.Fatalf("object %v, want %d bytes", o, size)
			case tc.code != codes.OK && status.Code(broke) != tc.code:
				t.Fatalf("the stream broke with %v, want code %v", broke, tc.code)
			}
			r.Unref()
			u.Life.Wait()
			if tc.code != codes.OK {
				return
			}
			persisted, qo, err := tr.QueryStatus(u, uri, st.Route(), size, 10*time.Second)
			if err != nil || persisted != size || qo.GetSize() != size {
				t.Fatalf("QueryStatus: %d, %v, %v; want the finished object", persisted, qo, err)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if !bytes.Equal(s.content, data) || !strings.Contains(s.hash, "crc32c=") {
				t.Fatalf("%d bytes stored, hash %q; want %d bytes and the object's CRC32C", len(s.content), s.hash, size)
			}
			if a.out != 0 {
				t.Fatalf("%d buffers not given back", a.out)
			}
		})
	}
}
