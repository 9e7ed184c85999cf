// Command smallobjects uploads many small objects with objup's UploadMany,
// verifies every one of them, and reports how fast it went and what it cost.
//
// Run it from the repository root; it needs no credentials and no network:
//
//	go run ./examples/smallobjects
//
// It starts a fake GCS in process (package fakes: a storage v2 gRPC server and
// the JSON API on loopback, on one indexed in-memory store), generates 10,000
// objects of 1 KiB to 64 KiB whose sizes and bytes follow from -seed, uploads
// them over gRPC with 16 at a time, then lists the bucket through the fake's
// JSON API over HTTP and checks that exactly those objects are there, with
// the sizes and CRC32C that were uploaded. The summary gives objects/s
// (overall and for each tenth of the run, so a slowdown shows), MB/s, the
// p50/p95/p99 latency of one object, the bytes allocated per object and the
// GC cycles during the upload, the client pool's counters, a part per tenant,
// the errors and the verification. The exit status is 0 when everything uploaded and verified,
// 1 when anything failed or did not verify, and 2 for a usage error.
//
// The generated content is produced as the uploader reads it (Item.Open), so
// the program holds no object in memory; the fake does hold them all
// (about 330 MB with the defaults).
//
// # Flags
//
//	-n 10000             number of generated objects
//	-min-size 1KiB       size range of generated objects (bytes, or KiB/MiB/GiB)
//	-max-size 64KiB
//	-seed 1              seed of the generated sizes and contents
//	-concurrency 16      uploads in flight
//	-dir PATH            upload the regular files under PATH instead; object
//	                     names are the paths relative to PATH with '/'
//	-bucket NAME         bucket (naming one without -endpoint means real GCS)
//	-prefix P            object name prefix (default smallobjects/, or
//	                     smallobjects/RUN-ID/ on an emulator or GCS)
//	-tenant ID           tenant sent as x-scope-orgid with every request
//	-tenants N           spread the objects over N tenants, t0 to tN-1, each
//	                     sent as its objects' x-scope-orgid (Item.Tenant);
//	                     not with -tenant
//	-buffers pool|caller chunk buffers from the client's pool (default), or
//	                     the program's own buffers, one per worker
//	                     (UploadMany's WithWorkerBuffers, i.e. WithBuffer)
//	-endpoint HOST:PORT  gRPC address of an emulator
//	-http-endpoint URL   JSON API of that emulator (or of GCS), to verify
//	-verify=false        do not verify
//	-quiet               no progress output
//	-json                print the summary as one JSON object
//	-timeout 10m         give up after this long
//	-write-rate N        the embedded fake admits N object writes a second and
//	                     refuses the rest (429), as a GCS bucket does
//	-admission=false     turn the client's admission stage off
//	                     (experimental.WithoutAdmission)
//
// With -write-rate the report has an "admission" line: the writes the fake
// admitted and refused, and the rate the client's stage learnt from the
// refusals; -admission=false shows the same run without the stage.
//
// Progress goes to standard error: a bar when it is a terminal, a line every
// two seconds otherwise. The summary goes to standard output.
//
// With -dir, a file that cannot be read (a dangling symbolic link, a file
// removed after the listing, a directory without permission) is reported with
// its error and the others go on; the run then exits with status 1. Entries
// that are not regular files are skipped.
//
// # Against an emulator
//
// Start the standalone fake in another terminal and point the example at it:
//
//	go run ./fakes/cmd/fakegcs -grpc 127.0.0.1:9090 -http 127.0.0.1:4443
//	go run ./examples/smallobjects -endpoint 127.0.0.1:9090 -http-endpoint http://127.0.0.1:4443
//
// STORAGE_EMULATOR_HOST_GRPC=127.0.0.1:9090 works instead of -endpoint, as for
// the official client. With -http-endpoint the example creates the bucket if
// the emulator lacks it, and verifies by listing it. Without, the bucket must
// exist (fakegcs -bucket objup-smallobjects) and the example can only check
// the size and CRC32C the service returned for each upload; the summary says
// so. Each run writes under a fresh prefix unless -prefix is given, so that
// runs do not see each other's objects.
//
// # Against real GCS
//
// Name a bucket you may write to, with no emulator set:
//
//	gcloud auth application-default login
//	go run ./examples/smallobjects -bucket my-bucket -n 1000
//
// The client then uses Application Default Credentials and TLS to
// storage.googleapis.com, and the verification lists the objects through the
// JSON API (https://storage.googleapis.com, or -http-endpoint) with the same
// credentials. The objects stay in the bucket under the printed prefix;
// remove them with gcloud storage rm -r gs://my-bucket/PREFIX.
//
// # Reading the figures
//
// The part per tenant (objects stored, bytes, failed uploads, retries, and
// the p50, p95 and mean duration of the stored objects) is not counted by
// the program: it is read from the client's own OpenTelemetry metrics
// (objup.uploads, objup.upload.size, objup.upload.duration and
// objup.upload.retries, with the objup.tenant attribute that
// uploader.Telemetry.TenantAttribute adds), recorded into an SDK MeterProvider and
// collected with a ManualReader once the uploads are done, as a service
// would export them. The percentiles are estimates from the histogram's
// buckets; the latency line above has the exact ones over every object. The
// text lists the first 10 tenants; -json has them all.
//
// The summary fits 80 columns. The memory line counts the whole process's
// allocations and says whose they are: with the embedded fake, the client's
// and the fake server's together (the fake keeps every object it receives);
// against an emulator in another process (above), the client's alone.
// Likewise the embedded fake shares the CPU with the client, so objects/s and
// latency measured with it describe the pair. The fake's store costs the
// same per object however full it is, so the rate holds over long runs
// (-n 200000).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/header"
	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader"
	"github.com/objup/objup/uploader/experimental"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// The first ^C ends the run with a summary; the next one kills.
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// usageError is bad input found after the flags were parsed: exit status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// run is the whole program: it parses args, uploads, verifies, prints the
// summary on stdout and progress and problems on stderr, and returns the
// exit status: 0 when everything uploaded and verified, 1 otherwise, 2 for a
// usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "smallobjects: %v\nRun smallobjects -h for the flags.\n", err)
		return 2
	}
	if cfg.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.timeout)
		defer cancel()
	}
	s, err := uploadAndVerify(ctx, cfg, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "smallobjects: %v\n", err)
		var ue usageError
		if errors.As(err, &ue) {
			return 2
		}
		return 1
	}
	if cfg.json {
		err = s.writeJSON(stdout)
	} else {
		err = s.writeText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "smallobjects: writing the summary: %v\n", err)
		return 1
	}
	if !s.OK {
		return 1
	}
	return 0
}

// uploadAndVerify does the work of one run. It returns an error only when the
// run could not take place (no fake, no client, a rejected batch); failed
// uploads and verification are in the summary.
func uploadAndVerify(ctx context.Context, cfg *config, stderr io.Writer) (*summary, error) {
	var (
		b   *batch
		err error
	)
	if cfg.dir != "" {
		if b, err = walk(cfg.dir, cfg.prefix); err != nil {
			return nil, err
		}
	} else {
		b = generate(cfg.n, cfg.minSize, cfg.maxSize, cfg.seed, cfg.prefix)
	}
	var tenants []string
	if cfg.tenants > 0 {
		tenants = tenantNames(cfg.tenants)
		b.spreadTenants(tenants)
	}

	// The JSON API client for verification: its own transport, whose idle
	// connections are closed at the end.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	defer transport.CloseIdleConnections()
	hc := &http.Client{Transport: transport, Timeout: 2 * time.Minute}

	s := &summary{
		Target:      cfg.target.String(),
		Endpoint:    cfg.endpoint,
		Bucket:      cfg.bucket,
		Prefix:      cfg.prefix,
		Source:      "generated",
		Seed:        cfg.seed,
		Tenant:      cfg.tenant,
		Tenants:     cfg.tenants,
		Concurrency: cfg.concurrency,
		Buffers:     "pool",
		GOMAXPROCS:  runtime.GOMAXPROCS(0),
	}
	if cfg.dir != "" {
		s.Source, s.Dir, s.Seed = "dir", cfg.dir, 0
	}
	var (
		opts     []option.ClientOption
		srv      *fakes.Server
		jsonBase = cfg.httpEndpoint
		scope    = "the client process alone"
	)
	switch cfg.target {
	case targetFake:
		srv, err = fakes.New(append([]fakes.Option{fakes.WithBucket(cfg.bucket)}, fakeCapacity(cfg)...)...)
		if err != nil {
			return nil, fmt.Errorf("starting the fake GCS: %w", err)
		}
		defer func() {
			if err := srv.Close(); err != nil {
				fmt.Fprintf(stderr, "smallobjects: closing the fake: %v\n", err)
			}
		}()
		s.Endpoint, jsonBase = srv.GRPCAddr(), srv.HTTPURL()
		opts = plaintext(srv.GRPCAddr())
		scope = "client and embedded fake, in one process"
	case targetEmulator:
		if !cfg.endpointFromEnv {
			// From the environment, NewClient dials the emulator itself.
			opts = plaintext(cfg.endpoint)
		}
		if jsonBase != "" {
			if err := ensureBucket(ctx, hc, jsonBase, cfg.bucket); err != nil {
				return nil, fmt.Errorf("bucket %s on the emulator: %w", cfg.bucket, err)
			}
		}
	case targetGCS:
		if jsonBase == "" {
			jsonBase = gcsJSONAPI
		}
		if cfg.verify {
			ts, err := google.DefaultTokenSource(ctx, "https://www.googleapis.com/auth/devstorage.read_only")
			if err != nil {
				return nil, fmt.Errorf("credentials for the verification: %w", err)
			}
			hc.Transport = &oauth2.Transport{Source: ts, Base: transport}
		}
	}

	if cfg.tenant != "" {
		ctx, err = header.WithTenant(ctx, cfg.tenant)
		if err != nil {
			return nil, usageError{err}
		}
	}
	// The per-tenant summary comes from the client's own metrics.
	mp, reader := newMeterProvider()
	defer mp.Shutdown(context.Background())
	if cfg.budget > 0 {
		p, err := pool.New(pool.WithBudget(cfg.budget))
		if err != nil {
			return nil, usageError{err}
		}
		opts = append(opts, uploader.WithPool(p))
	}
	if !cfg.fair {
		// Each tenant has more places in line than it has waiters, and
		// may hold the whole budget: first come, first served.
		opts = append(opts, uploader.WithTenantLimits(uploader.TenantLimits{Bytes: math.MaxInt64, Weight: func(string) int { return 1 << 30 }}))
	}
	if !cfg.admission {
		opts = append(opts, experimental.WithoutAdmission())
	}
	client, err := uploader.NewClient(ctx, append(opts, clientTelemetry(mp)...)...)
	if err != nil {
		return nil, err
	}
	defer client.Close()

	prog := startProgress(stderr, len(b.items), cfg.quiet)
	many := []uploader.ManyOption{uploader.OnResult(prog.add)}
	if cfg.callerBuffers {
		bufs := callerBuffers(cfg.concurrency, b.maxSize)
		many = append(many, uploader.WithWorkerBuffers(bufs...))
		s.Buffers, s.CallerBuffers, s.CallerBufferBytes = "caller", len(bufs), len(bufs[0])
	} else {
		many = append(many, uploader.WithConcurrency(cfg.concurrency))
	}

	poolBefore, memBefore := poolStats(experimental.Allocator(client)), readMem()
	var noisy *noise
	if cfg.noisySize > 0 {
		if noisy, err = startNoise(ctx, client, cfg); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	results, upErr := client.UploadMany(ctx, cfg.bucket, b.items, many...)
	elapsed := time.Since(start)
	var noisyErr error
	if noisy != nil {
		s.Noisy, noisyErr = noisy.stop()
	}
	memAfter := readMem()
	// The admission figures are the client's gauges: read them while it
	// is open.
	if cfg.writeRate > 0 || !cfg.admission {
		if s.Admission, err = admissionFrom(context.WithoutCancel(ctx), cfg, srv, reader); err != nil {
			fmt.Fprintf(stderr, "smallobjects: collecting the admission figures: %v\n", err)
		}
	}
	// Buffers that gRPC held when the noisy tenant's uploads were
	// abandoned go back in the background, and Close waits for them.
	if err := client.Close(); err != nil {
		fmt.Fprintf(stderr, "smallobjects: closing the client: %v\n", err)
	}
	poolAfter := poolStats(experimental.Allocator(client))
	prog.finish()
	if results == nil && upErr != nil {
		// The batch was rejected before anything was sent: a bad bucket
		// name or an option UploadMany refuses.
		if uploader.CodeOf(upErr) == codes.InvalidArgument {
			return nil, usageError{upErr}
		}
		return nil, upErr
	}

	s.addResults(b.objects, results, elapsed)
	s.addPace(prog.pace())
	s.addMemory(memBefore, memAfter, scope)
	s.Pool = poolDelta(poolBefore, poolAfter)
	for _, p := range b.problems {
		s.Failed++
		s.addError(p.path, p.err)
	}
	s.Skipped, s.SkippedAt = len(b.skipped), b.skipped[:min(len(b.skipped), maxErrors)]

	// Collected even when ctx ended: the uploads that ran were recorded.
	if s.ByTenant, err = tenantsFrom(context.WithoutCancel(ctx), reader); err != nil {
		fmt.Fprintf(stderr, "smallobjects: collecting the client's metrics: %v\n", err)
	}
	if cfg.tenant != "" {
		tenants = []string{cfg.tenant}
	}
	if noisy != nil && tenants != nil {
		tenants = append(tenants, noisyTenant)
	}
	if noisyErr != nil {
		s.Failed++
		s.addError("(noisy tenant)", noisyErr)
	}
	if srv != nil && tenants != nil {
		s.TenantCalls = &tenantCalls{}
		for _, c := range srv.CallCounts() {
			s.TenantCalls.Total += int(c.Count)
			if slices.Contains(tenants, c.Tenant) {
				s.TenantCalls.WithTenant += int(c.Count)
			}
		}
	}

	switch {
	case ctx.Err() != nil:
		s.Verify = verification{Method: verifyNone, Note: fmt.Sprintf("the run was cut short (%v)", context.Cause(ctx))}
	case !cfg.verify:
		s.Verify = verification{Method: verifyNone, Passed: true}
	case jsonBase != "":
		s.Verify = verifyListed(ctx, hc, jsonBase, cfg.bucket, cfg.prefix, b.objects, results)
	default:
		s.Verify = verifyAgainstResponses(b.objects, results)
		s.Verify.Note = "no JSON API to list the bucket (give -http-endpoint): checked the size and CRC32C the service returned for each upload"
	}
	s.OK = s.Failed == 0 && s.Verify.Passed &&
		(s.TenantCalls == nil || s.TenantCalls.WithTenant == s.TenantCalls.Total)
	return s, nil
}

// plaintext are the client options for an emulator: its address, no TLS, no
// credentials.
func plaintext(addr string) []option.ClientOption {
	return []option.ClientOption{
		option.WithEndpoint(addr),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
	}
}

// callerBuffers is the program's own buffer pool for -buffers caller: one
// buffer per worker, cut from one allocation. Each holds the largest object
// rounded up to 4 KiB, so that every upload is a single WriteObject call. When
// the largest object exceeds 256 KiB, each buffer is four 256 KiB quanta
// instead, which the Writer uses as the chunk slots of a resumable upload.
func callerBuffers(n int, maxSize int64) [][]byte {
	const page = 4 << 10
	size := int((maxSize + page - 1) / page * page)
	if size == 0 {
		size = page
	}
	if size > pool.Quantum {
		size = 4 * pool.Quantum
	}
	slab := make([]byte, n*size)
	bufs := make([][]byte, n)
	for i := range bufs {
		bufs[i] = slab[i*size : (i+1)*size : (i+1)*size]
	}
	return bufs
}
