// Command fakegcs runs the fake GCS of package fakes as a standalone server:
// a storage v2 gRPC server and the JSON API over HTTP on the same store, in
// memory or on disk (-data), which costs the same per request with ten
// million objects as with a thousand.
//
// Usage:
//
//	fakegcs [-grpc 127.0.0.1:9090] [-http 127.0.0.1:4443] [-bucket NAME]... [-zonal-bucket NAME]...
//	        [-data DIR]
//	        [-https 127.0.0.1:4444 [-cert FILE]]
//	        [-call-log N] [-credential TOKEN=ROLE]...
//	        [-commit-delay D] [-commit-delay-max D] [-commit-seed N] [-deadline-drop]
//	        [-rtt 20ms] [-bandwidth 100MB/s] [-max-streams 100]
//	        [-session-expiry 168h] [-max-sessions N]
//	        [-write-rate 1000] [-write-burst N] [-object-rate 1] [-share-503 0.1]
//	        [-autoscale-after 1m] [-autoscale-factor 2] [-autoscale-max 8000]
//
// Both addresses default to 127.0.0.1:0 (a free port on loopback); an empty
// host ("-grpc :9090") also means loopback, and only an explicit host such as
// 0.0.0.0 listens elsewhere. -bucket creates a bucket and may be repeated.
// -zonal-bucket creates a zonal bucket, as fakes.WithZonalBucket does
// (location type "zone", storage class RAPID, appendable writes only); it
// may be repeated or name several buckets separated by commas.
//
// -data DIR keeps the store on disk in DIR, as fakes.WithDataDir does:
// fakegcs restarted on the same DIR, after a clean stop or a kill -9,
// finds every bucket, object, resumable session, XML API multipart upload
// (with its parts) and HMAC key it acknowledged, and its memory does not
// grow with the number of objects, nor with the size of a part.
// Without -data the store is in memory and lost at exit.
//
// Once both servers listen, fakegcs prints exactly two lines on standard
// output, which scripts may parse:
//
//	grpc 127.0.0.1:PORT
//	http http://127.0.0.1:PORT
//
// -https also serves the JSON and XML APIs over HTTPS on that address (as
// fakes.WithHTTPSAddr does), with a self-signed certificate made at start,
// which -cert writes to a file (PEM) before the addresses are printed;
// fakegcs then prints a third line, "https https://127.0.0.1:PORT". That
// is the port for gsutil, whose JSON mode speaks only HTTPS; a boto
// config points it there:
//
//	[Credentials]
//	gs_json_host = 127.0.0.1
//	gs_json_port = PORT
//	[Boto]
//	ca_certificates_file = FILE
//
// (gsutil run through the Cloud SDK's wrapper takes its CA file from the
// SDK instead: CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE=FILE, with
// CLOUDSDK_CORE_PASS_CREDENTIALS_TO_GSUTIL=false for no credentials;
// conformance/gcloud.sh runs such sessions.) gcloud storage speaks plain
// HTTP to the -http port: CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE=URL/.
//
// While it runs, GET http://ADDR/_objup/stats answers with the objects and
// bytes stored per tenant (the x-scope-orgid of the writes) and the calls
// counted per method, tenant and code, as JSON. -call-log sets how many
// recent calls the server keeps in its request log (a bounded ring; the
// counters count every call).
//
// The HTTP port also serves the retry test API of Google's storage testbench
// (POST /retry_test, GET and DELETE /retry_test/ID, GET /retry_tests): a
// test arms instructions such as "return-503" or
// "return-503-after-256K" per JSON API method, and the requests that carry
// its id (header x-retry-test-id over HTTP, metadata over gRPC) consume
// them. So the official clients' retry conformance suites run against
// fakegcs: conformance/run.sh runs the Go client's, with
// STORAGE_EMULATOR_HOST=http://ADDR and STORAGE_EMULATOR_HOST_GRPC=ADDR,
// and conformance/python.sh the Python client's, with
// STORAGE_EMULATOR_HOST=http://ADDR. Besides objects and buckets, the JSON
// API serves what those suites call (copy and rewrite, bucket patch and
// update, ACLs, IAM policies, notification configs, HMAC keys, the service
// account), and resumable uploads in every Content-Range form GCS takes,
// as the Node.js client sends them. See docs/fake/retry-test.md for the instructions
// and methods.
//
// -credential TOKEN=ROLE holds the requests that carry "authorization:
// Bearer TOKEN" to ROLE (objectViewer, objectCreator, objectUser or
// objectAdmin, or the full name such as roles/storage.objectCreator), as
// fakes.WithCredential does: a request the role does not allow is refused
// with 403 (gRPC PERMISSION_DENIED). It may be repeated; requests without
// a known token keep full access.
//
// -commit-delay D makes every write that stores an object wait D before
// it stores it, as a backend slow to commit (fakes.WithCommitDelay); with
// -commit-delay-max, each write waits a delay drawn uniformly between the
// two, from a source seeded with -commit-seed (fakes.CommitJitter).
// -deadline-drop drops a gRPC write whose deadline passed before it was
// applied (fakes.WithDeadlineDrop, an assumed behaviour for experiments;
// by default such a write is applied).
//
// -rtt and -bandwidth put a simulated network path in front of both ports
// (package fakes/link: the round-trip time, and the bandwidth of each
// connection in each direction, such as 100MB/s), and -max-streams caps the
// concurrent streams of one gRPC connection as GCS's front ends do (about
// 100); all three are off by default. -session-expiry and -max-sessions
// bound the resumable sessions kept (a week, as GCS, and 100,000).
//
// -write-rate gives every bucket a write capacity, as GCS has (package
// fakes/capacity): a token bucket of that many object writes a second, of
// -write-burst at once (a second's worth by default); uploads, resumable
// session starts, composes, deletes, metadata updates, copies, rewrites
// and the completes of XML multipart uploads count, the later requests
// of a session, the parts of a multipart upload and reads do not.
// A bucket over its rate answers 429 rateLimitExceeded (gRPC
// RESOURCE_EXHAUSTED), or 503 for the -share-503 of its refusals.
// -object-rate limits the writes to one object name (1 a second by
// default once a capacity is on, as GCS; negative: no limit; alone, it
// turns on the per-name limit only). -autoscale-after grows a bucket's
// rate by -autoscale-factor (2) once it has been saturated that long, up to
// -autoscale-max. All are off by default. The counts of admitted and
// refused writes, per bucket and tenant, are served at /_objup/stats and
// printed at exit.
//
// It serves until SIGINT or SIGTERM, then shuts down gracefully (calls in
// flight get up to 5 seconds), prints the objects and bytes stored per
// tenant, and the write capacity's counts if it had one, on standard
// error, and exits with status 0. It exits with status 2
// on bad flags and 1 if it cannot start or stop cleanly.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/capflag"
	"github.com/objup/objup/fakes/link"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// buckets is a repeatable -bucket flag.
type buckets []string

func (b *buckets) String() string     { return strings.Join(*b, ",") }
func (b *buckets) Set(v string) error { *b = append(*b, v); return nil }

// credentials is a repeatable -credential TOKEN=ROLE flag.
type credentials []fakes.Option

func (c *credentials) String() string { return "" }
func (c *credentials) Set(v string) error {
	tok, name, ok := strings.Cut(v, "=")
	if !ok || tok == "" {
		return fmt.Errorf("want TOKEN=ROLE, got %q", v)
	}
	r, err := fakes.ParseRole(name)
	if err != nil {
		return err
	}
	*c = append(*c, fakes.WithCredential(tok, r))
	return nil
}

// run serves until ctx ends and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fakegcs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	grpcAddr := fs.String("grpc", fakes.DefaultAddr, "`address` of the storage v2 gRPC server")
	httpAddr := fs.String("http", fakes.DefaultAddr, "`address` of the JSON/XML API server")
	httpsAddr := fs.String("https", "", "also serve the JSON/XML API over HTTPS on `address`, with a certificate made at start (empty: no HTTPS)")
	certFile := fs.String("cert", "", "with -https, write the HTTPS certificate (PEM) to `file`, for clients to trust")
	var bs buckets
	fs.Var(&bs, "bucket", "create bucket `NAME` (repeatable)")
	var zs api.NameList
	fs.Var(&zs, "zonal-bucket", "create zonal bucket `NAME`, which takes appendable writes only (repeatable, or a comma-separated list)")
	var creds credentials
	fs.Var(&creds, "credential", "hold requests with bearer `TOKEN=ROLE` to the role (objectViewer, objectCreator, objectUser, objectAdmin; repeatable)")
	commitDelay := fs.Duration("commit-delay", 0, "every write that stores an object waits this long first (a slow commit)")
	commitMax := fs.Duration("commit-delay-max", 0, "with -commit-delay, draw each write's delay uniformly up to this")
	commitSeed := fs.Uint64("commit-seed", 1, "seed of the commit delays drawn with -commit-delay-max")
	deadlineDrop := fs.Bool("deadline-drop", false, "drop a gRPC write whose deadline passed before it was applied (assumed behaviour)")
	callLog := fs.Int("call-log", fakes.DefaultCallLog, "keep the last `N` calls in the request log")
	expiry := fs.Duration("session-expiry", fakes.DefaultSessionExpiry, "a resumable session unused for this long expires")
	maxSessions := fs.Int("max-sessions", fakes.DefaultMaxSessions, "keep at most `N` resumable sessions; the one unused longest expires first")
	rtt := fs.Duration("rtt", 0, "simulated round-trip time in front of both ports (0: none)")
	bandwidth := fs.String("bandwidth", "0", "simulated bandwidth of each connection and direction, such as 100MB/s (0: unlimited)")
	maxStreams := fs.Int("max-streams", 0, "cap the concurrent streams of one gRPC connection at `N`, as GCS front ends do (0: no cap)")
	dataDir := fs.String("data", "", "keep the store on disk in `DIR` (created if needed), to survive restarts (empty: in memory)")
	capFlags := capflag.Register(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fakegcs: unexpected arguments: %q\n", fs.Args())
		return 2
	}
	bw, err := link.ParseBandwidth(*bandwidth)
	if err != nil {
		fmt.Fprintf(stderr, "fakegcs: -bandwidth: %v\n", err)
		return 2
	}
	opts := []fakes.Option{fakes.WithGRPCAddr(*grpcAddr), fakes.WithHTTPAddr(*httpAddr), fakes.WithCallLog(*callLog),
		fakes.WithSessionExpiry(*expiry), fakes.WithMaxSessions(*maxSessions),
		fakes.WithLink(link.Config{RTT: *rtt, Bandwidth: bw}), fakes.WithMaxStreams(*maxStreams)}
	if *certFile != "" && *httpsAddr == "" {
		fmt.Fprintln(stderr, "fakegcs: -cert needs -https")
		return 2
	}
	if *httpsAddr != "" {
		opts = append(opts, fakes.WithHTTPSAddr(*httpsAddr))
	}
	if *dataDir != "" {
		opts = append(opts, fakes.WithDataDir(*dataDir))
	}
	for _, b := range bs {
		opts = append(opts, fakes.WithBucket(b))
	}
	for _, b := range zs {
		opts = append(opts, fakes.WithZonalBucket(b))
	}
	opts = append(opts, creds...)
	switch {
	case *commitMax != 0 && (*commitMax < *commitDelay || *commitDelay < 0):
		fmt.Fprintf(stderr, "fakegcs: -commit-delay-max %v: want at least -commit-delay %v, which must not be negative\n", *commitMax, *commitDelay)
		return 2
	case *commitMax != 0:
		opts = append(opts, fakes.WithCommitDelays(fakes.CommitJitter(*commitDelay, *commitMax, *commitSeed)))
	default:
		opts = append(opts, fakes.WithCommitDelay(*commitDelay))
	}
	if *deadlineDrop {
		opts = append(opts, fakes.WithDeadlineDrop())
	}
	capCfg, capOn, err := capFlags.Config()
	if err != nil {
		fmt.Fprintf(stderr, "fakegcs: %v\n", err)
		return 2
	}
	if capOn {
		opts = append(opts, fakes.WithCapacity(capCfg))
	}
	srv, err := fakes.New(opts...)
	if err != nil {
		fmt.Fprintf(stderr, "fakegcs: %v\n", err)
		return 1
	}
	if *certFile != "" {
		if err := os.WriteFile(*certFile, srv.CertPEM(), 0o644); err != nil {
			fmt.Fprintf(stderr, "fakegcs: -cert: %v\n", err)
			srv.Close()
			return 1
		}
	}
	fmt.Fprintf(stdout, "grpc %s\nhttp %s\n", srv.GRPCAddr(), srv.HTTPURL())
	if u := srv.HTTPSURL(); u != "" {
		fmt.Fprintf(stdout, "https %s\n", u)
	}
	<-ctx.Done()
	err = srv.Close()
	printUsage(stderr, srv.Usage())
	capflag.Print(stderr, "fakegcs: write capacity per bucket and tenant (writes admitted and refused):", srv.CapacityStats())
	if err != nil {
		fmt.Fprintf(stderr, "fakegcs: %v\n", err)
		return 1
	}
	return 0
}

// printUsage writes the objects and bytes stored per tenant, as a table.
func printUsage(w io.Writer, usage []fakes.Usage) {
	if len(usage) == 0 {
		fmt.Fprintln(w, "fakegcs: no objects stored")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "fakegcs: objects stored per tenant (x-scope-orgid):")
	fmt.Fprintln(tw, "tenant\tobjects\tbytes\t")
	for _, u := range usage {
		t := u.Tenant
		if t == "" {
			t = "(none)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t\n", t, u.Objects, u.Bytes)
	}
	tw.Flush()
}
