package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/googleapis/gax-go/v2"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/fakes/faultproxy"
	"github.com/objup/objup/fakes/frontend"
	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader"
	"github.com/objup/objup/uploader/experimental"
)

// The size of TestRandomFaults: OBJUP_FAULT_UPLOADS uploads (CI runs the
// default; thousands make the full run), drawn from OBJUP_FAULT_SEED.
const (
	faultUploadsEnv = "OBJUP_FAULT_UPLOADS"
	faultSeedEnv    = "OBJUP_FAULT_SEED"
)

// faultOverrun is how long past its context's deadline an upload may
// return: experimental.AfterContext, and room for a loaded machine running
// the race detector. The stalls last up to several times longer.
const faultOverrun = experimental.AfterContext + 1500*time.Millisecond

// faultCase is one upload of TestRandomFaults.
type faultCase struct {
	name     string
	tr       string // "gRPC" or "JSON"
	short    bool   // the client with a short attempt timeout
	size     int
	seed     uint64
	ifNew    bool
	parallel bool
	// multipart: a parallel upload through the XML API's multipart
	// upload (else, when parallel, a composite upload)
	multipart bool
	session   bool // WithResumable: a small object through a session
	always    bool // RetryAlways, without a precondition
	deadline  time.Duration
}

// sessioned reports whether the upload went through a resumable session
// (over one chunk, 256 KiB, and not parallel, or WithResumable) or a
// multipart upload: an upload id completes once, so nothing of it is
// stored after the upload returned.
func (fc faultCase) sessioned() bool {
	return fc.session || fc.multipart || (!fc.parallel && fc.size > 256<<10)
}

// faultResult is what became of one upload.
type faultResult struct {
	faultCase
	err     error
	overrun time.Duration
}

// TestRandomFaults runs uploads through fault proxies in front of the
// fake's gRPC and JSON ports that reset, cut and stall connections at
// random byte offsets and drop them all now and then; 0 B to 16 MiB, some
// as parallel uploads, some small ones WithResumable, gRPC and JSON, with
// and without DoesNotExist, short and long deadlines, default and
// short attempt timeouts. Every outcome is checked against the fake
// itself, against what the package doc promises:
//
//   - an upload that returned nil stored exactly its bytes (then the test
//     deletes it; an upload through a session must stay deleted, since a
//     late message of a finished session makes no second generation; a
//     one-shot write's lost attempt may land again, as documented, and is
//     counted);
//   - one that failed with an error of known outcome stored nothing, even
//     after every stall ended and every commit finished;
//   - every error is an *uploader.Error, and a network failure is never
//     reported as Internal;
//   - no call returns more than faultOverrun after its context's deadline
//     (some uploads retry always, without a precondition);
//   - a parallel upload without a precondition never fails with
//     FailedPrecondition (its parts' retries meeting their own writes);
//   - no buffer is held, no goroutine leaks; temporary objects left (a
//     part the service applied after the cleanup, as documented) are
//     counted.
//
// It logs the outcomes by code, and fails on any violation.
//
// The service it runs against is as wide as GCS: commits take from 0 to
// twice the short attempt timeout (a fifth of them over 100 ms), and the
// fault proxies draw, per connection, whether the bytes they hold from a
// sender that resets are dropped or still delivered (a network queue, a
// front end that read them). It runs twice: straight to the fake, and
// through HAProxy as an L7 front end between the faults and the fake
// (skipped where HAProxy is missing; OBJUP_FAULT_VIA=direct or frontend
// runs one).
func TestRandomFaults(t *testing.T) {
	for _, via := range []string{"direct", "frontend"} {
		t.Run(via, func(t *testing.T) {
			if v := os.Getenv("OBJUP_FAULT_VIA"); v != "" && v != via {
				t.Skipf("OBJUP_FAULT_VIA=%s", v)
			}
			randomFaults(t, via == "frontend")
		})
	}
}

// randomFaults is one run of TestRandomFaults, through a front end if
// frontEnd.
func randomFaults(t *testing.T, frontEnd bool) {
	n, seed := faultCount(t, faultUploadsEnv, 120), faultSeed(t)
	t.Logf("%d uploads, seed %d (%s, %s)", n, seed, faultUploadsEnv, faultSeedEnv)

	commits := rand.New(rand.NewPCG(seed, 0xc0))
	srv, err := fakes.New(fakes.WithBucket(testBucket), fakes.WithCommitDelays(func() time.Duration {
		if commits.IntN(5) > 0 {
			return time.Duration(commits.Int64N(int64(100 * time.Millisecond)))
		}
		return time.Duration(commits.Int64N(int64(2 * time.Second)))
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	grpcTarget, httpTarget := srv.GRPCAddr(), strings.TrimPrefix(srv.HTTPURL(), "http://")
	if frontEnd {
		grpcTarget = frontend.StartTest(t, grpcTarget, frontend.GRPC)
		httpTarget = frontend.StartTest(t, httpTarget, frontend.HTTP1)
	}
	random := faultproxy.Random{
		MeanBytes: 3 << 20,
		Weights:   [3]int{2, 1, 2},
		StallMin:  200 * time.Millisecond, StallMax: 3 * time.Second,
		DropMin: 4 * time.Second, DropMax: 12 * time.Second,
		Held: [2]int{1, 1},
	}
	gp, err := faultproxy.New(grpcTarget, faultproxy.WithRandom(int64(seed), random))
	if err != nil {
		t.Fatal(err)
	}
	defer gp.Close()
	hp, err := faultproxy.New(httpTarget, faultproxy.WithRandom(int64(seed)+1, random))
	if err != nil {
		t.Fatal(err)
	}
	defer hp.Close()

	buffers, err := pool.New(pool.WithBudget(64 << 20))
	if err != nil {
		t.Fatal(err)
	}
	retry := uploader.Retry{
		Backoff:  gax.Backoff{Initial: 10 * time.Millisecond, Max: 500 * time.Millisecond},
		Deadline: 20 * time.Second,
	}
	short := retry
	short.AttemptTimeout = time.Second
	// Warnings (a temporary object that could not be deleted, say) are
	// kept for the report.
	var warnings struct {
		sync.Mutex
		bytes.Buffer
	}
	level := slog.LevelWarn
	if os.Getenv("OBJUP_FAULT_DEBUG") != "" {
		level = slog.LevelDebug // every part and every temporary deleted
	}
	logger := slog.New(slog.NewTextHandler(&lockedWriter{mu: &warnings.Mutex, w: &warnings.Buffer}, &slog.HandlerOptions{Level: level}))
	common := []option.ClientOption{uploader.WithPool(buffers), option.WithoutAuthentication(), uploader.WithTelemetry(uploader.Telemetry{Logger: logger})}
	grpcOpts := append(common[:len(common):len(common)], option.WithEndpoint(gp.Addr()),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	// The JSON clients find the emulator through STORAGE_EMULATOR_HOST, as
	// users do: its HTTP/1.1 connections are cut when a request is
	// abandoned.
	t.Setenv("STORAGE_EMULATOR_HOST", hp.Addr())
	clients := map[string]*uploader.Client{}
	for _, v := range []struct {
		name string
		opts []option.ClientOption
	}{
		{"gRPC", append(grpcOpts, uploader.WithRetry(retry))},
		{"gRPC/short", append(grpcOpts, uploader.WithRetry(short), experimental.WithKeepalive(10*time.Second, time.Second))},
		{"JSON", append(common, uploader.WithHTTP(), uploader.WithRetry(retry))},
		{"JSON/short", append(common, uploader.WithHTTP(), uploader.WithRetry(short))},
	} {
		c, err := uploader.NewClient(context.Background(), v.opts...)
		if err != nil {
			t.Fatal(err)
		}
		clients[v.name] = c
	}

	rng := rand.New(rand.NewPCG(seed, 0x6f626a7570))
	cases := make([]faultCase, n)
	for i := range cases {
		fc := faultCase{name: fmt.Sprintf("fault/%05d", i), seed: rng.Uint64(), deadline: time.Minute}
		fc.tr = []string{"gRPC", "JSON"}[rng.IntN(2)]
		if tr := os.Getenv("OBJUP_FAULT_TRANSPORT"); tr != "" {
			fc.tr = tr // gRPC or JSON alone
		}
		fc.short = rng.IntN(2) == 0
		switch r := rng.IntN(10); {
		case r < 5:
			fc.size = rng.IntN(64 << 10)
		case r < 8:
			fc.size = rng.IntN(4 << 20)
		default:
			fc.size = 4<<20 + rng.IntN(12<<20)
			fc.parallel = rng.IntN(2) == 0
		}
		if os.Getenv("OBJUP_FAULT_PARALLEL") != "" {
			fc.size, fc.parallel = 4<<20+rng.IntN(12<<20), true // parallel uploads alone
		}
		fc.ifNew = rng.IntN(2) == 0
		if fc.parallel && rng.IntN(2) == 0 {
			// The XML API's multipart upload takes no precondition.
			fc.multipart, fc.ifNew = true, false
		}
		fc.session = !fc.parallel && fc.size <= 256<<10 && rng.IntN(3) == 0
		fc.always = !fc.ifNew && rng.IntN(3) == 0
		if rng.IntN(4) == 0 {
			fc.deadline = 200*time.Millisecond + time.Duration(rng.Int64N(int64(1800*time.Millisecond)))
		}
		cases[i] = fc
	}

	results := make([]faultResult, n)
	var bad struct {
		sync.Mutex
		corrupt []string
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				fc := cases[i]
				name := fc.tr
				if fc.short {
					name += "/short"
				}
				data := faultPayload(fc.size, fc.seed)
				var opts []uploader.WriterOption
				if fc.ifNew {
					opts = append(opts, uploader.WithConditions(uploader.Conditions{DoesNotExist: true}))
				}
				switch {
				case fc.multipart:
					opts = append(opts, uploader.WithParallelUpload(uploader.ParallelUpload{PartSize: 5 << 20, Method: uploader.ViaMultipart}))
				case fc.parallel:
					opts = append(opts, uploader.WithParallelUpload(uploader.ParallelUpload{PartSize: 2 << 20, Method: uploader.ViaCompose}))
				}
				if fc.session {
					opts = append(opts, uploader.WithResumable())
				}
				if fc.always {
					opts = append(opts, uploader.WithRetry(uploader.Retry{Policy: uploader.RetryAlways}))
				}
				ctx, cancel := context.WithTimeout(context.Background(), fc.deadline)
				_, err := clients[name].Upload(ctx, testBucket, fc.name, bytes.NewReader(data), opts...)
				d, _ := ctx.Deadline()
				results[i] = faultResult{faultCase: fc, err: err, overrun: time.Since(d)}
				cancel()
				if err != nil {
					continue
				}
				o, oerr := srv.Object(testBucket, fc.name)
				if oerr != nil || !bytes.Equal(o.Content, data) {
					bad.Lock()
					bad.corrupt = append(bad.corrupt, fmt.Sprintf("%s: Upload returned nil; stored: %v", fc.name, oerr))
					bad.Unlock()
					continue
				}
				deleteObject(t, srv, fc.name)
			}
		}()
	}
	for i := range cases {
		work <- i
	}
	close(work)
	wg.Wait()
	runEnd := time.Now()

	// Let everything in flight end: the clients' background work, the
	// stalls (what they held lands now, or was dropped), the commits.
	for _, c := range clients {
		if err := c.Close(); err != nil {
			t.Errorf("Client.Close: %v", err)
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, p := range []*faultproxy.Proxy{gp, hp} {
		if err := p.Settle(sctx); err != nil {
			t.Errorf("proxy settle: %v", err)
		}
	}
	// The calls that settle outcomes (status queries, cancels, look-ups),
	// beside the writes.
	perMethod := map[string]int{}
	for _, cc := range srv.CallCounts() {
		perMethod[cc.Method] += int(cc.Count)
	}
	gstats, hstats := gp.Stats(), hp.Stats()
	gp.Close()
	hp.Close()
	var uploadsLeft []string
	for _, u := range srv.MultipartUploads() {
		uploadsLeft = append(uploadsLeft, fmt.Sprintf("%+v", u))
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}

	var (
		byCode                                  = map[string]int{}
		example                                 = map[string]string{}
		storedAfterError, cameBack, parallel412 []string
		lateOneShot                             []string
		untyped, internal, overrun              []string
		maxOverrun                              time.Duration
		unknown                                 int
	)
	for _, r := range results {
		key := r.tr + " " + uploader.CodeOf(r.err).String()
		if uploader.IsOutcomeUnknown(r.err) {
			key += " (outcome unknown)"
			unknown++
		}
		byCode[key]++
		if r.err != nil && example[key] == "" {
			example[key] = r.err.Error()
		}
		if r.deadline < time.Minute {
			maxOverrun = max(maxOverrun, r.overrun)
		}
		if r.overrun > faultOverrun {
			overrun = append(overrun, fmt.Sprintf("%s: returned %v after its deadline (%v, %d bytes, parallel %v, multipart %v)", r.name, r.overrun.Round(time.Millisecond), r.deadline.Round(time.Millisecond), r.size, r.parallel, r.multipart))
		}
		_, oerr := srv.Object(testBucket, r.name)
		stored := oerr == nil
		switch {
		case r.err == nil:
			switch {
			case stored && r.sessioned():
				cameBack = append(cameBack, r.name)
			case stored:
				// A one-shot write (or a parallel upload's compose)
				// whose lost attempt the service applied after the
				// caller's delete: the package doc names the case.
				lateOneShot = append(lateOneShot, r.name)
			}
			continue
		case stored && !uploader.IsOutcomeUnknown(r.err):
			storedAfterError = append(storedAfterError, fmt.Sprintf("%s: %v", r.name, r.err))
		}
		var oe *uploader.Error
		if !errors.As(r.err, &oe) {
			untyped = append(untyped, fmt.Sprintf("%s: %T %v", r.name, r.err, r.err))
		}
		if uploader.CodeOf(r.err) == codes.Internal {
			internal = append(internal, fmt.Sprintf("%s: %v", r.name, r.err))
		}
		if r.parallel && !r.ifNew && uploader.CodeOf(r.err) == codes.FailedPrecondition {
			parallel412 = append(parallel412, fmt.Sprintf("%s: %v", r.name, r.err))
		}
	}
	temps, err := srv.ListObjects(testBucket, "objup-tmp/")
	if err != nil {
		t.Fatal(err)
	}

	keys := make([]string, 0, len(byCode))
	for k := range byCode {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%-55s %5d  %.200s", k, byCode[k], example[k])
	}
	t.Logf("outcome unknown: %d; longest return past a short deadline: %v", unknown, maxOverrun.Round(time.Millisecond))
	methods := make([]string, 0, len(perMethod))
	for m := range perMethod {
		methods = append(methods, m)
	}
	sort.Strings(methods)
	for _, m := range methods {
		t.Logf("calls of %-40s %6d", m, perMethod[m])
	}
	t.Logf("gRPC proxy: %+v", gstats)
	t.Logf("JSON proxy: %+v", hstats)
	for _, v := range []struct {
		what string
		list []string
	}{
		{"returned nil but not stored exactly", bad.corrupt},
		{"failed (outcome known) but stored", storedAfterError},
		{"through a session: stored, deleted, and there again", cameBack},
		{"not an *uploader.Error", untyped},
		{"reported as Internal", internal},
		{"returned past its context", overrun},
		{"parallel upload without a precondition failed with FailedPrecondition", parallel412},
		{"multipart upload neither completed nor aborted", uploadsLeft},
	} {
		t.Logf("%-72s %d", v.what+":", len(v.list))
		for _, s := range v.list {
			t.Errorf("%s: %s", v.what, s)
		}
	}
	t.Logf("%-72s %d", "one-shot: stored, deleted, and there again (as documented):", len(lateOneShot))
	for _, s := range lateOneShot {
		t.Logf("  %s", s)
	}
	// A part the service applied after the cleanup is left under the
	// prefix, as WithParallelUpload says: counted, not a violation.
	t.Logf("%-72s %d", "temporary objects left (as documented):", len(temps))
	for _, o := range temps {
		t.Logf("  temporary object left: %s (%d bytes, created %s, %v before the end of the run)", o.Name, o.Size, o.Created.Format(time.StampMicro), runEnd.Sub(o.Created))
	}
	if len(temps) > 0 {
		warnings.Lock()
		for _, l := range strings.Split(warnings.String(), "\n") {
			if strings.Contains(l, "temporary") {
				t.Log(l)
			}
		}
		warnings.Unlock()
	}
	if s := buffers.Stats(); s.InUseBytes != 0 {
		t.Errorf("%d bytes of buffers in use after every client closed", s.InUseBytes)
	}
}

// faultCount is the count the environment variable name gives, or def.
func faultCount(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive count", name, v)
	}
	return n
}

// faultSeed is the seed OBJUP_FAULT_SEED gives, or 1.
func faultSeed(t *testing.T) uint64 {
	t.Helper()
	v := os.Getenv(faultSeedEnv)
	if v == "" {
		return 1
	}
	seed, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", faultSeedEnv, v, err)
	}
	return seed
}

// faultPayload returns n bytes drawn from seed.
func faultPayload(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed>>1))
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

// deleteObject deletes an object through the fake's JSON API, straight,
// not through a proxy.
func deleteObject(t *testing.T, srv *fakes.Server, name string) {
	req, err := http.NewRequest(http.MethodDelete, srv.HTTPURL()+"/storage/v1/b/"+testBucket+"/o/"+url.PathEscape(name), nil)
	if err != nil {
		t.Error(err)
		return
	}
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		t.Error(err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusOK {
		t.Errorf("DELETE %s: %s", name, resp.Status)
	}
}

// noKeepAlive is an HTTP client that leaves no connection behind.
var noKeepAlive = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
