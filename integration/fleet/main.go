// Command fleet is one client process of BenchmarkFleet (package
// integration): it uploads small objects with unique names to one bucket of
// a fake GCS over gRPC (plaintext, no authentication), with a fixed number
// of uploads in flight, until its duration ends, and prints what it saw as
// one line of JSON on standard output.
//
// Usage:
//
//	fleet -grpc ADDR -bucket NAME [-client objup|objup-noadmission|official]
//	      [-inflight K] [-size BYTES] [-duration D] [-ifnew] [-many N]
//	      [-tenant ID] [-ramp] [-prefix P] [-chunk BYTES]
//
// The clients: "objup" is uploader.Client with its defaults (the admission
// stage on); "objup-noadmission" adds experimental.WithoutAdmission;
// "official" is cloud.google.com/go/storage's gRPC client, each object in
// one request (Writer.ChunkSize 0, which keeps no copy of the data, so that
// a retry under a precondition carries none and fails; -chunk sets another
// ChunkSize, such as 262144, with which a 4 KiB object still goes in one
// request and a retry resends it). -ifnew makes every upload conditional
// on the object not existing (uploader.Conditions{DoesNotExist: true}, or the official
// client's DoesNotExist condition). -tenant sends the x-scope-orgid header
// (header.WithTenant or Item.Tenant for objup, outgoing metadata for the
// official client). -many N (objup only) uploads batches of N items with
// UploadMany, one batch after another, each with a concurrency of
// -inflight. -ramp starts at an eighth of -inflight and doubles it every
// quarter of -duration. Objects are named PREFIX/N; give each process its
// own -prefix.
//
// No upload starts after -duration; each upload's context ends 60 seconds
// after it, so the uploads in flight finish. The line printed holds the
// uploads started, stored (and of those, stored before the duration
// ended) and failed (by gRPC code: uploader.CodeOf for objup, status.Code
// for the official client), how many of the failed ones objup reported
// with an unknown outcome (uploader.IsOutcomeUnknown; the official client
// does not tell), the p50, p99 and maximum latency of every upload that
// ended, stored or not (for UploadMany, each item's Result.Duration), the
// seconds from the first upload's start to the last one's end, the first
// error of each code that failed, and when the duration started:
//
//	{"client":"objup","started":12034,"stored":12034,"storedInTime":11929,"failed":{},"outcomeUnknown":0,"p50ms":80.1,"p99ms":410.3,"maxms":702.9,"wallSec":25.4,"start":"2026-11-25T04:20:00.123456789Z"}
//
// fleet exits with status 2 on bad flags and 1 if it cannot set its client
// up; failed uploads are data, not errors.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/header"
	"github.com/objup/objup/uploader"
	"github.com/objup/objup/uploader/experimental"
)

// grace is how long an upload may run after the duration ends.
const grace = 60 * time.Second

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// config is the command's flags.
type config struct {
	addr, bucket, client, tenant, prefix string
	inflight, size, many, chunk          int
	duration                             time.Duration
	ifNew, ramp                          bool
}

// report is the line fleet prints.
type report struct {
	Client  string `json:"client"`
	Tenant  string `json:"tenant,omitempty"`
	Started int64  `json:"started"`
	Stored  int64  `json:"stored"`
	// StoredInTime counts the uploads stored before the duration ended.
	StoredInTime   int64            `json:"storedInTime"`
	Failed         map[string]int64 `json:"failed"`
	OutcomeUnknown int64            `json:"outcomeUnknown"`
	// Errors holds the first error of each code, as text.
	Errors  map[string]string `json:"errors,omitempty"`
	P50ms   float64           `json:"p50ms"`
	P99ms   float64           `json:"p99ms"`
	MaxMs   float64           `json:"maxms"`
	WallSec float64           `json:"wallSec"`
	// Start is when the duration started.
	Start time.Time `json:"start"`
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	fs.StringVar(&c.addr, "grpc", "", "`address` of the fake's gRPC server (plaintext)")
	fs.StringVar(&c.bucket, "bucket", "", "the bucket to upload to")
	fs.StringVar(&c.client, "client", "objup", "objup, objup-noadmission or official (see -chunk)")
	fs.IntVar(&c.inflight, "inflight", 64, "uploads in flight")
	fs.IntVar(&c.size, "size", 4<<10, "object size in bytes")
	fs.DurationVar(&c.duration, "duration", 25*time.Second, "start uploads for this long")
	fs.BoolVar(&c.ifNew, "ifnew", false, "upload only if the object does not exist")
	fs.IntVar(&c.many, "many", 0, "upload batches of `N` items with UploadMany (objup only)")
	fs.StringVar(&c.tenant, "tenant", "", "send tenant `ID` as x-scope-orgid")
	fs.BoolVar(&c.ramp, "ramp", false, "start at inflight/8 and double every duration/4")
	fs.StringVar(&c.prefix, "prefix", "fleet", "object name prefix, unique per process")
	fs.IntVar(&c.chunk, "chunk", 0, "the official client's Writer.ChunkSize (0: one request, no copy kept for a retry)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := c.validate(fs.NArg()); err != nil {
		fmt.Fprintf(stderr, "fleet: %v\n", err)
		return 2
	}
	ctx := context.Background()
	up, closeClient, err := c.uploader(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "fleet: %v\n", err)
		return 1
	}
	r := c.drive(up)
	closeClient()
	r.Client, r.Tenant = c.client, c.tenant
	line, _ := json.Marshal(r)
	fmt.Fprintf(stdout, "%s\n", line)
	return 0
}

func (c *config) validate(nargs int) error {
	var errs []string
	if nargs > 0 {
		errs = append(errs, "unexpected arguments")
	}
	if c.addr == "" || c.bucket == "" {
		errs = append(errs, "-grpc and -bucket are required")
	}
	switch c.client {
	case "objup", "objup-noadmission", "official":
	default:
		errs = append(errs, fmt.Sprintf("-client %q: want objup, objup-noadmission or official", c.client))
	}
	if c.inflight < 1 || c.size < 0 || c.duration <= 0 || c.many < 0 || c.chunk < 0 {
		errs = append(errs, "-inflight and -duration must be positive, -size, -many and -chunk not negative")
	}
	if c.chunk > 0 && c.client != "official" {
		errs = append(errs, "-chunk is for the official client only")
	}
	if c.many > 0 && c.client == "official" {
		errs = append(errs, "-many is for objup only")
	}
	if c.tenant != "" {
		if _, err := header.WithTenant(context.Background(), c.tenant); err != nil {
			errs = append(errs, fmt.Sprintf("-tenant: %v", err))
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// uploadFunc uploads data as object name.
type uploadFunc func(ctx context.Context, name string, data []byte) error

// fleetClient is what drive uploads with: one object at a time (one), or
// batches (many, objup only).
type fleetClient struct {
	one  uploadFunc
	many func(ctx context.Context, items []uploader.Item, concurrency int, done func(uploader.Result)) []uploader.Result
	code func(error) codes.Code
}

// uploader dials the client -client names and returns it with its Close.
func (c *config) uploader(ctx context.Context) (fleetClient, func(), error) {
	dial := []option.ClientOption{
		option.WithEndpoint(c.addr),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
	}
	if c.client == "official" {
		sc, err := storage.NewGRPCClient(ctx, append(dial, storage.WithDisabledClientMetrics())...)
		if err != nil {
			return fleetClient{}, nil, err
		}
		bkt := sc.Bucket(c.bucket)
		one := func(ctx context.Context, name string, data []byte) error {
			o := bkt.Object(name)
			if c.ifNew {
				o = o.If(storage.Conditions{DoesNotExist: true})
			}
			if c.tenant != "" {
				ctx = metadata.AppendToOutgoingContext(ctx, header.TenantKey, c.tenant)
			}
			w := o.NewWriter(ctx)
			w.ChunkSize = c.chunk
			if _, err := w.Write(data); err != nil {
				w.Close()
				return err
			}
			return w.Close()
		}
		return fleetClient{one: one, code: officialCode}, func() { sc.Close() }, nil
	}
	if c.client == "objup-noadmission" {
		dial = append(dial, experimental.WithoutAdmission())
	}
	oc, err := uploader.NewClient(ctx, dial...)
	if err != nil {
		return fleetClient{}, nil, err
	}
	var wopts []uploader.WriterOption
	if c.ifNew {
		wopts = append(wopts, uploader.WithConditions(uploader.Conditions{DoesNotExist: true}))
	}
	one := func(ctx context.Context, name string, data []byte) error {
		if c.tenant != "" {
			ctx, _ = header.WithTenant(ctx, c.tenant) // checked by validate
		}
		_, err := oc.Upload(ctx, c.bucket, name, bytes.NewReader(data), wopts...)
		return err
	}
	many := func(ctx context.Context, items []uploader.Item, concurrency int, done func(uploader.Result)) []uploader.Result {
		for i := range items {
			items[i].Tenant, items[i].Options = c.tenant, wopts
		}
		rs, _ := oc.UploadMany(ctx, c.bucket, items, uploader.WithConcurrency(concurrency),
			uploader.OnResult(func(_ int, r uploader.Result) { done(r) }))
		return rs
	}
	return fleetClient{one: one, many: many, code: uploader.CodeOf}, func() { oc.Close() }, nil
}

// officialCode is the gRPC code of an error of the official client; a
// context's error is its own code.
func officialCode(err error) codes.Code {
	if code := status.Code(err); code != codes.Unknown {
		return code
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return status.FromContextError(err).Code()
	}
	return codes.Unknown
}

// tally is what some uploads saw; each worker has its own.
type tally struct {
	started, stored, unknown int64
	storedInTime             int64 // stored before the duration ended
	failed                   map[codes.Code]int64
	errs                     map[codes.Code]string // the first error of each code
	lat                      []time.Duration
	first, last              time.Time
}

func (t *tally) add(code codes.Code, err error, unknown bool, d time.Duration) {
	if t.failed == nil {
		t.failed = make(map[codes.Code]int64)
		t.errs = make(map[codes.Code]string)
	}
	if err == nil {
		t.stored++
	} else {
		t.failed[code]++
		if _, ok := t.errs[code]; !ok {
			t.errs[code] = err.Error()
		}
		if unknown {
			t.unknown++
		}
	}
	t.lat = append(t.lat, d)
}

// span widens the tally's wall time to cover start to end.
func (t *tally) span(start, end time.Time) {
	if t.first.IsZero() || start.Before(t.first) {
		t.first = start
	}
	if end.After(t.last) {
		t.last = end
	}
}

// level is the uploads in flight at elapsed time since the start: inflight,
// or with -ramp an eighth of it (at least one), doubled every quarter of
// the duration.
func (c *config) level(elapsed time.Duration) int {
	if !c.ramp || c.duration < 4 {
		return c.inflight
	}
	step := min(3, int(elapsed/(c.duration/4)))
	return max(1, c.inflight>>(3-step))
}

// drive uploads until the duration ends and returns the report.
func (c *config) drive(fc fleetClient) report {
	data := make([]byte, c.size)
	for i := range data {
		data[i] = byte(rand.Uint32())
	}
	start := time.Now()
	end := start.Add(c.duration)
	ctx, cancel := context.WithDeadline(context.Background(), end.Add(grace))
	defer cancel()
	var next atomic.Int64
	name := func() string { return fmt.Sprintf("%s/%d", c.prefix, next.Add(1)-1) }
	unknown := func(err error) bool {
		return c.client != "official" && uploader.IsOutcomeUnknown(err)
	}

	var tallies []*tally
	if c.many > 0 {
		t := new(tally)
		tallies = append(tallies, t)
		items := make([]uploader.Item, c.many)
		for time.Now().Before(end) {
			for i := range items {
				items[i] = uploader.Item{Name: name(), Data: data}
			}
			t.started += int64(len(items))
			s := time.Now()
			// Items end on UploadMany's workers. An item's Duration runs
			// from its open to its end: a batch's items wait for a worker,
			// not counted, and a skipped item never started.
			var inTime atomic.Int64
			done := func(r uploader.Result) {
				if r.Err == nil && time.Now().Before(end) {
					inTime.Add(1)
				}
			}
			rs := fc.many(ctx, items, c.level(s.Sub(start)), done)
			t.storedInTime += inTime.Load()
			for _, r := range rs {
				t.add(fc.code(r.Err), r.Err, r.Err != nil && unknown(r.Err), r.Duration)
			}
			t.span(s, time.Now())
		}
	} else {
		var wg sync.WaitGroup
		for w := range c.inflight {
			t := new(tally)
			tallies = append(tallies, t)
			// With -ramp, worker w joins once the level reaches w+1.
			var at time.Duration
			for at < c.duration && c.level(at) <= w {
				at += c.duration / 4
			}
			if at >= c.duration {
				continue
			}
			wg.Go(func() {
				time.Sleep(time.Until(start.Add(at)))
				for time.Now().Before(end) {
					t.started++
					s := time.Now()
					err := fc.one(ctx, name(), data)
					d := time.Since(s)
					if err == nil && s.Add(d).Before(end) {
						t.storedInTime++
					}
					t.add(fc.code(err), err, err != nil && unknown(err), d)
					t.span(s, s.Add(d))
				}
			})
		}
		wg.Wait()
	}
	r := summarize(tallies)
	r.Start = start
	return r
}

// summarize merges the tallies into a report.
func summarize(ts []*tally) report {
	r := report{Failed: map[string]int64{}}
	var lat []time.Duration
	var first, last time.Time
	for _, t := range ts {
		r.Started += t.started
		r.Stored += t.stored
		r.StoredInTime += t.storedInTime
		r.OutcomeUnknown += t.unknown
		for code, n := range t.failed {
			r.Failed[code.String()] += n
		}
		for code, e := range t.errs {
			if r.Errors == nil {
				r.Errors = map[string]string{}
			}
			if _, ok := r.Errors[code.String()]; !ok {
				r.Errors[code.String()] = e
			}
		}
		lat = append(lat, t.lat...)
		if !t.first.IsZero() && (first.IsZero() || t.first.Before(first)) {
			first = t.first
		}
		if t.last.After(last) {
			last = t.last
		}
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
		q := func(f float64) time.Duration { return lat[int(f*float64(len(lat)-1))] }
		r.P50ms, r.P99ms, r.MaxMs = ms(q(0.5)), ms(q(0.99)), ms(lat[len(lat)-1])
		r.WallSec = last.Sub(first).Seconds()
	}
	return r
}
