package fakes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/fakes/capacity"
	"github.com/objup/objup/internal/wire"
)

// capClock is the capacity's clock in these tests: it moves only when
// told.
type capClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *capClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *capClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// startCapacity starts a server whose test bucket has the capacity cfg,
// on a clock that moves only when told.
func startCapacity(t *testing.T, cfg capacity.Config) (*fakes.Server, *grpc.ClientConn, *capClock) {
	t.Helper()
	clk := &capClock{t: time.Unix(1e9, 0)}
	srv, cc := start(t, fakes.WithBucketCapacity(bucket, cfg), fakes.WithCapacityClock(clk.now))
	return srv, cc, clk
}

// Messages of the capacity's refusals, as GCS words them.
func bucketLimitMsg(b string) string {
	return "The bucket " + b + " exceeded the rate limit for object writes (create, update, and delete). Please reduce your request rate. See https://cloud.google.com/storage/docs/gcs429."
}

func objectLimitMsg(b, o string) string {
	return "The object " + b + "/" + o + " exceeded the rate limit for object mutation operations (create, update, and delete). Please reduce your request rate. See https://cloud.google.com/storage/docs/gcs429."
}

// wantRefused checks a gRPC call's error: code and message.
func wantRefused(t *testing.T, err error, code codes.Code, msg string) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != code || (msg != "" && st.Message() != msg) {
		t.Fatalf("got %v %q, want %v %q", st.Code(), st.Message(), code, msg)
	}
}

// wantJSONRefusal checks an HTTP reply byte for byte against GCS's error
// body for status st, reason and domain, with message msg.
func wantJSONRefusal(t *testing.T, r *reply, st int, msg, domain, reason string) {
	t.Helper()
	m, _ := json.Marshal(msg)
	want := fmt.Sprintf(`{"error":{"code":%d,"message":%s,"errors":[{"message":%s,"domain":%q,"reason":%q}]}}`, st, m, m, domain, reason)
	if r.status != st || string(r.body) != want {
		t.Fatalf("got %d %s\nwant %d %s", r.status, r.body, st, want)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q", ct)
	}
}

// exists reports whether the test bucket holds name.
func exists(srv *fakes.Server, name string) bool {
	_, err := srv.Object(bucket, name)
	return err == nil
}

// seed stores name in the test bucket directly, without a request (so
// the capacity does not see it).
func seed(t *testing.T, srv *fakes.Server, name string) {
	t.Helper()
	if _, err := srv.PutObject(fakes.Object{ObjectAttrs: fakes.ObjectAttrs{Bucket: bucket, Name: name}, Content: []byte("seed " + name)}); err != nil {
		t.Fatal(err)
	}
}

// writeKind is one kind of call that counts as a write.
type writeKind struct {
	name string
	// seed: the call needs an object of its name already (a delete or
	// an update).
	seed bool
	// do makes the call on name.
	grpc func(ctx context.Context, cc *grpc.ClientConn, name string) error
	http func(t *testing.T, srv *fakes.Server, name string) *reply
	// done reports whether the call on name had its effect.
	done func(srv *fakes.Server, name string) bool
}

func stored(srv *fakes.Server, name string) bool  { return exists(srv, name) }
func deleted(srv *fakes.Server, name string) bool { return !exists(srv, name) }
func updated(srv *fakes.Server, name string) bool {
	o, err := srv.Object(bucket, name)
	return err == nil && o.Metageneration == 2
}

// rawUpdate is an UpdateObjectRequest that sets the content type of name.
func rawUpdate(name string) []byte {
	obj, _ := proto.Marshal(&wire.Object{Name: name, Bucket: bucketRes, ContentType: "text/plain"})
	return pb(1, obj, 7, pb(1, "content_type"))
}

var grpcWrites = []writeKind{
	{name: "WriteObject", done: stored, grpc: func(ctx context.Context, cc *grpc.ClientConn, name string) error {
		_, err := writeObject(ctx, cc, chunks([]byte("data"), mib, withSpec(spec(name)))...)
		return err
	}},
	{name: "BidiWriteObject", done: stored, grpc: func(ctx context.Context, cc *grpc.ClientConn, name string) error {
		_, err := bidi(ctx, cc, bidiChunks([]byte("data"), mib, bidiSpec(spec(name)))...)
		return err
	}},
	{name: "BidiWriteObject appendable", done: stored, grpc: func(ctx context.Context, cc *grpc.ClientConn, name string) error {
		s := spec(name)
		s.Appendable = proto.Bool(true)
		msgs := bidiChunks([]byte("data"), mib, bidiSpec(s))
		msgs[0].ObjectChecksums.Md5Hash = nil // an appendable object has none
		_, err := bidi(ctx, cc, msgs...)
		return err
	}},
	{name: "StartResumableWrite", done: nil, grpc: func(ctx context.Context, cc *grpc.ClientConn, name string) error {
		var resp wire.StartResumableWriteResponse
		return cc.Invoke(ctx, wire.MethodStartResumableWrite, &wire.StartResumableWriteRequest{WriteObjectSpec: spec(name)}, &resp)
	}},
	{name: "DeleteObject", seed: true, done: deleted, grpc: func(ctx context.Context, cc *grpc.ClientConn, name string) error {
		return cc.Invoke(ctx, "/google.storage.v2.Storage/DeleteObject", &wire.DeleteObjectRequest{Bucket: bucketRes, Object: name}, &emptypb.Empty{})
	}},
	{name: "UpdateObject", seed: true, done: updated, grpc: func(ctx context.Context, cc *grpc.ClientConn, name string) error {
		_, err := rawCall(ctx, cc, "UpdateObject", rawUpdate(name))
		return err
	}},
	{name: "ComposeObject", done: stored, grpc: func(ctx context.Context, cc *grpc.ClientConn, name string) error {
		var resp wire.Object
		return cc.Invoke(ctx, "/google.storage.v2.Storage/ComposeObject", &wire.ComposeObjectRequest{
			Destination:   &wire.Object{Bucket: bucketRes, Name: name},
			SourceObjects: []*wire.ComposeObjectRequest_SourceObject{{Name: "src"}},
		}, &resp)
	}},
	{name: "RewriteObject", done: stored, grpc: func(ctx context.Context, cc *grpc.ClientConn, name string) error {
		_, err := rawCall(ctx, cc, "RewriteObject", pb(2, bucketRes, 3, "src", 24, name, 25, bucketRes))
		return err
	}},
}

// jsonPost sends a POST with a JSON body.
func jsonPost(t *testing.T, srv *fakes.Server, path, body string, hdr ...string) *reply {
	return do(t, srv, "POST", path, []byte(body), append([]string{"Content-Type", "application/json"}, hdr...)...)
}

var httpWrites = []writeKind{
	{name: "objects.insert media", done: stored, http: func(t *testing.T, srv *fakes.Server, name string) *reply {
		return do(t, srv, "POST", uploadPath("media", name), []byte("data"))
	}},
	{name: "objects.insert multipart", done: stored, http: func(t *testing.T, srv *fakes.Server, name string) *reply {
		body, ct := multipartBody(t, `{"name":"`+name+`"}`, "text/plain", []byte("data"))
		return do(t, srv, "POST", uploadPath("multipart", ""), body, "Content-Type", ct)
	}},
	{name: "objects.insert resumable", done: nil, http: func(t *testing.T, srv *fakes.Server, name string) *reply {
		return jsonPost(t, srv, uploadPath("resumable", ""), `{"name":"`+name+`"}`)
	}},
	{name: "objects.delete", seed: true, done: deleted, http: func(t *testing.T, srv *fakes.Server, name string) *reply {
		return do(t, srv, "DELETE", objPath(name), nil)
	}},
	{name: "objects.patch", seed: true, done: updated, http: func(t *testing.T, srv *fakes.Server, name string) *reply {
		return do(t, srv, "PATCH", objPath(name), []byte(`{"contentType":"text/plain"}`), "Content-Type", "application/json")
	}},
	{name: "objects.update", seed: true, done: updated, http: func(t *testing.T, srv *fakes.Server, name string) *reply {
		return do(t, srv, "PUT", objPath(name), []byte(`{"contentType":"text/plain"}`), "Content-Type", "application/json")
	}},
	{name: "objects.compose", done: stored, http: func(t *testing.T, srv *fakes.Server, name string) *reply {
		return jsonPost(t, srv, objPath(name)+"/compose", `{"sourceObjects":[{"name":"src"}]}`)
	}},
	{name: "objects.copy", done: stored, http: func(t *testing.T, srv *fakes.Server, name string) *reply {
		return jsonPost(t, srv, objPath("src")+"/copyTo/b/"+bucket+"/o/"+url.PathEscape(name), `{}`)
	}},
	{name: "objects.rewrite", done: stored, http: func(t *testing.T, srv *fakes.Server, name string) *reply {
		return jsonPost(t, srv, objPath("src")+"/rewriteTo/b/"+bucket+"/o/"+url.PathEscape(name), `{}`)
	}},
}

// TestCapacityWrites makes each kind of write, over gRPC and over JSON, on
// a bucket of burst 2 and 1 write a second: two pass, the third is refused
// as GCS refuses it, with nothing stored or changed, and a second later
// one more passes. Reads pass all along, uncounted.
func TestCapacityWrites(t *testing.T) {
	cfg := capacity.Config{Rate: 1, Burst: 2, ObjectRate: -1}
	for _, k := range append(grpcWrites, httpWrites...) {
		t.Run(k.name, func(t *testing.T) {
			srv, cc, clk := startCapacity(t, cfg)
			names := []string{"w0", "w1", "w2", "w3"}
			seed(t, srv, "src") // of a compose, a copy, a rewrite
			if k.seed {
				for _, n := range names {
					seed(t, srv, n)
				}
			}
			sessions := srv.Sessions().Open
			write := func(name string) (refused bool) {
				t.Helper()
				if k.grpc != nil {
					err := k.grpc(ctxT(t), cc, name)
					if err == nil {
						return false
					}
					wantRefused(t, err, codes.ResourceExhausted, bucketLimitMsg(bucket))
					return true
				}
				r := k.http(t, srv, name)
				if r.status == http.StatusOK || r.status == http.StatusNoContent {
					return false
				}
				wantJSONRefusal(t, r, http.StatusTooManyRequests, bucketLimitMsg(bucket), "usageLimits", "rateLimitExceeded")
				return true
			}
			for i, n := range names {
				if i == 3 {
					clk.advance(time.Second)
				}
				refused := write(n)
				if refused != (i == 2) {
					t.Fatalf("write %d of %s: refused %v", i+1, n, refused)
				}
				switch {
				case k.done != nil && k.done(srv, n) == refused:
					t.Fatalf("write %d of %s: refused %v, done %v", i+1, n, refused, !refused)
				case k.done == nil && srv.Sessions().Open != sessions+i+1-btoi(i >= 2):
					t.Fatalf("write %d: %d sessions open, from %d", i+1, srv.Sessions().Open, sessions)
				}
				// Reads are not counted, and pass.
				if _, err := getObject(ctxT(t), cc, &wire.GetObjectRequest{Bucket: bucketRes, Object: "absent"}); status.Code(err) != codes.NotFound {
					t.Fatalf("GetObject: %v", err)
				}
				if r := do(t, srv, "GET", "/storage/v1/b/"+bucket+"/o", nil); r.status != http.StatusOK {
					t.Fatalf("objects.list: %d", r.status)
				}
			}
			st := srv.CapacityStats()
			if len(st) != 1 || st[0].Bucket != bucket || st[0].Counts != (capacity.Counts{Admitted: 3, RateLimited: 1}) {
				t.Fatalf("CapacityStats: %+v", st)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestCapacitySessionsNotCounted starts a session on each API, which
// empties the bucket, then writes both sessions in several requests and
// messages: none is counted, and both objects are stored. A new upload is
// then refused.
func TestCapacitySessionsNotCounted(t *testing.T) {
	srv, cc, _ := startCapacity(t, capacity.Config{Rate: 1, Burst: 2, ObjectRate: -1})
	data := payload(3*256<<10, 1)

	// gRPC: three messages on three streams, a status query between.
	id := startResumable(t, cc, spec("grpc-session"))
	msgs := chunks(data, 256<<10, nil)
	if _, err := writeObject(ctxT(t), cc, append([]*wire.WriteObjectRequest{withFirst(msgs[0], id)}, withoutFinish(msgs[1]))...); err != nil {
		t.Fatal(err)
	}
	if _, err := queryWriteStatus(ctxT(t), cc, id); err != nil {
		t.Fatal(err)
	}
	last := bidiChunks(data[2*256<<10:], 256<<10, bidiUpload(id))
	last[0].WriteOffset = 2 * 256 << 10
	last[0].ObjectChecksums = msgs[2].ObjectChecksums
	if _, err := bidi(ctxT(t), cc, last...); err != nil {
		t.Fatal(err)
	}

	// JSON: three chunks by PUT, a status query between.
	loc := startSession(t, srv, "", `{"name":"json-session"}`)
	for i := range 3 {
		first, end := i*256<<10, (i+1)*256<<10
		total := "*"
		if i == 2 {
			total = fmt.Sprint(len(data))
		}
		r := do(t, srv, "PUT", loc, data[first:end], "Content-Range", fmt.Sprintf("bytes %d-%d/%s", first, end-1, total))
		if want := map[bool]int{false: http.StatusPermanentRedirect, true: http.StatusOK}[i == 2]; r.status != want {
			t.Fatalf("chunk %d: %d %s", i, r.status, r.body)
		}
		if i == 0 {
			if r := do(t, srv, "PUT", loc, nil, "Content-Range", "bytes */*"); r.status != http.StatusPermanentRedirect {
				t.Fatalf("status query: %d", r.status)
			}
		}
	}
	for _, n := range []string{"grpc-session", "json-session"} {
		o, err := srv.Object(bucket, n)
		if err != nil || string(o.Content) != string(data) {
			t.Fatalf("%s: %v", n, err)
		}
	}
	if st := srv.CapacityStats(); st[0].Counts != (capacity.Counts{Admitted: 2}) {
		t.Fatalf("CapacityStats: %+v", st)
	}
	_, err := writeObject(ctxT(t), cc, chunks([]byte("x"), mib, withSpec(spec("one-shot")))...)
	wantRefused(t, err, codes.ResourceExhausted, bucketLimitMsg(bucket))
}

// withFirst makes m the first message of a session's stream.
func withFirst(m *wire.WriteObjectRequest, id string) *wire.WriteObjectRequest {
	withUpload(id)(m)
	return m
}

// withoutFinish leaves m unfinished, so that the session goes on.
func withoutFinish(m *wire.WriteObjectRequest) *wire.WriteObjectRequest {
	m.FinishWrite, m.ObjectChecksums = false, nil
	return m
}

// TestCapacityObjectRate writes one name twice in a second on each API:
// the second is refused with GCS's message for a name, while other names
// pass; a second later the name takes a write again.
func TestCapacityObjectRate(t *testing.T) {
	srv, cc, clk := startCapacity(t, capacity.Config{Rate: 1000, ObjectBurst: 1})
	putName := func(name string) error {
		_, err := writeObject(ctxT(t), cc, chunks([]byte(name), mib, withSpec(spec(name)))...)
		return err
	}
	if err := putName("hot"); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, putName("hot"), codes.ResourceExhausted, objectLimitMsg(bucket, "hot"))
	if err := putName("cold"); err != nil {
		t.Fatal(err)
	}
	httpPut(t, srv, "hot/json", []byte("1"))
	r := do(t, srv, "POST", uploadPath("media", "hot/json"), []byte("2"))
	wantJSONRefusal(t, r, http.StatusTooManyRequests, objectLimitMsg(bucket, "hot/json"), "usageLimits", "rateLimitExceeded")
	r = do(t, srv, "DELETE", objPath("hot/json"), nil)
	wantJSONRefusal(t, r, http.StatusTooManyRequests, objectLimitMsg(bucket, "hot/json"), "usageLimits", "rateLimitExceeded")
	if b, _ := httpGet(t, srv, "hot/json"); string(b) != "1" {
		t.Fatalf("hot/json holds %q", b)
	}
	httpPut(t, srv, "cold/json", []byte("1"))

	clk.advance(time.Second)
	if err := putName("hot"); err != nil {
		t.Fatal(err)
	}
	if st := srv.CapacityStats(); st[0].Counts != (capacity.Counts{Admitted: 5, ObjectRateLimited: 3}) {
		t.Fatalf("CapacityStats: %+v", st)
	}
}

// TestCapacityShare503 answers every refusal with 503: gRPC Unavailable,
// and JSON 503 backendError in the global domain.
func TestCapacityShare503(t *testing.T) {
	srv, cc, _ := startCapacity(t, capacity.Config{Rate: 1, Burst: 1, Share503: 1, ObjectRate: -1})
	put(t, cc, "a", []byte("a"))
	_, err := writeObject(ctxT(t), cc, chunks([]byte("b"), mib, withSpec(spec("b")))...)
	msg := "The bucket " + bucket + " is over its write capacity and the service is unavailable for this write. Please retry with exponential backoff."
	wantRefused(t, err, codes.Unavailable, msg)
	r := do(t, srv, "POST", uploadPath("media", "c"), []byte("c"))
	wantJSONRefusal(t, r, http.StatusServiceUnavailable, msg, "global", "backendError")
	if exists(srv, "b") || exists(srv, "c") {
		t.Fatal("a refused write was stored")
	}
	if st := srv.CapacityStats(); st[0].Counts != (capacity.Counts{Admitted: 1, Unavailable: 2}) {
		t.Fatalf("CapacityStats: %+v", st)
	}
}

// TestCapacityTenants counts writes per tenant, from gRPC metadata and the
// HTTP header, in CapacityStats and at /_objup/stats.
func TestCapacityTenants(t *testing.T) {
	srv, cc, _ := startCapacity(t, capacity.Config{Rate: 1, Burst: 3, ObjectRate: -1})
	t1 := metadata.AppendToOutgoingContext(ctxT(t), "x-scope-orgid", "t1")
	putAs := func(name string) error {
		_, err := writeObject(t1, cc, chunks([]byte(name), mib, withSpec(spec(name)))...)
		return err
	}
	postAs := func(name string) *reply {
		return do(t, srv, "POST", uploadPath("media", name), []byte(name), "X-Scope-OrgID", "t2")
	}
	if err := putAs("a"); err != nil {
		t.Fatal(err)
	}
	if err := putAs("b"); err != nil {
		t.Fatal(err)
	}
	if r := postAs("c"); r.status != http.StatusOK {
		t.Fatalf("t2's first write: %d %s", r.status, r.body)
	}
	wantRefused(t, putAs("d"), codes.ResourceExhausted, "")
	if r := postAs("e"); r.status != http.StatusTooManyRequests {
		t.Fatalf("t2's second write: %d", r.status)
	}
	want := []capacity.TenantStats{
		{Tenant: "t1", Counts: capacity.Counts{Admitted: 2, RateLimited: 1}},
		{Tenant: "t2", Counts: capacity.Counts{Admitted: 1, RateLimited: 1}},
	}
	st := srv.CapacityStats()
	if len(st) != 1 || fmt.Sprint(st[0].Tenants) != fmt.Sprint(want) || st[0].Rate != 1 || st[0].Burst != 3 {
		t.Fatalf("CapacityStats: %+v", st)
	}

	var body struct {
		Capacity []struct {
			Bucket      string
			Rate, Burst float64
			Admitted    int64
			RateLimited int64 `json:"rateLimited"`
			Tenants     []struct {
				Tenant      string
				Admitted    int64
				RateLimited int64 `json:"rateLimited"`
			}
		}
	}
	do(t, srv, "GET", "/_objup/stats", nil).decode(t, &body)
	if c := body.Capacity; len(c) != 1 || c[0].Bucket != bucket || c[0].Rate != 1 || c[0].Admitted != 3 || c[0].RateLimited != 2 ||
		fmt.Sprint(c[0].Tenants) != "[{t1 2 1} {t2 1 1}]" {
		t.Fatalf("/_objup/stats capacity: %+v", c)
	}
}

// TestCapacityAutoscale keeps a bucket of 1 write a second (burst 2)
// saturated for a second: its rate doubles.
func TestCapacityAutoscale(t *testing.T) {
	srv, cc, clk := startCapacity(t, capacity.Config{Rate: 1, Burst: 2, AutoscaleAfter: time.Second, ObjectRate: -1})
	try := func(name string) error {
		_, err := writeObject(ctxT(t), cc, chunks([]byte(name), mib, withSpec(spec(name)))...)
		return err
	}
	for i, step := range []struct {
		advance time.Duration
		refused bool
		rate    float64
	}{
		{0, false, 1}, {0, false, 1}, {0, true, 1}, // saturated from here
		{time.Second, false, 1}, {0, true, 2}, // a second later: doubled
		{500 * time.Millisecond, false, 2}, {0, true, 2},
	} {
		clk.advance(step.advance)
		err := try(fmt.Sprint("o", i))
		if (err != nil) != step.refused {
			t.Fatalf("write %d: %v", i+1, err)
		}
		if r := srv.CapacityStats()[0].Rate; r != step.rate {
			t.Fatalf("write %d: rate %v, want %v", i+1, r, step.rate)
		}
	}
}

// TestCapacityOptions checks WithCapacity for every bucket beside
// WithBucketCapacity, and the validation of both.
func TestCapacityOptions(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket(bucket), fakes.WithBucket("other"), fakes.WithBucket("free"),
		fakes.WithCapacity(capacity.Config{Rate: 1, ObjectRate: -1}),
		fakes.WithBucketCapacity("free", capacity.Config{Rate: 1e9, ObjectRate: -1}))
	for _, b := range []string{bucket, "other", "free"} {
		for i := range 3 {
			r := do(t, srv, "POST", "/upload/storage/v1/b/"+b+"/o?uploadType=media&name="+fmt.Sprint(i), []byte("x"))
			if want := b == "free" || i == 0; (r.status == http.StatusOK) != want {
				t.Fatalf("%s, write %d: %d", b, i+1, r.status)
			}
		}
	}
	// A bucket that does not exist is answered 404, not counted.
	if r := do(t, srv, "POST", "/upload/storage/v1/b/missing/o?uploadType=media&name=x", []byte("x")); r.status != http.StatusNotFound {
		t.Fatalf("missing bucket: %d", r.status)
	}
	var got []string
	for _, b := range srv.CapacityStats() {
		got = append(got, fmt.Sprintf("%s %d/%d", b.Bucket, b.Admitted, b.Refused()))
	}
	if s := strings.Join(got, ", "); s != "fake-test 1/2, free 3/0, other 1/2" {
		t.Fatalf("CapacityStats: %s", s)
	}

	for _, opt := range []fakes.Option{
		fakes.WithCapacity(capacity.Config{Rate: -1}),
		fakes.WithBucketCapacity("Not A Bucket", capacity.Config{}),
		fakes.WithBucketCapacity("bkt", capacity.Config{Share503: 2}),
	} {
		if s, err := fakes.New(opt); err == nil {
			s.Close()
			t.Errorf("New accepted a bad capacity")
		} else if !strings.Contains(err.Error(), "capacity") {
			t.Errorf("New: %v", err)
		}
	}
	if st := fakes.NewTest(t).CapacityStats(); st != nil {
		t.Errorf("CapacityStats without a capacity: %+v", st)
	}
}
