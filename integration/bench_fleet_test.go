package integration

// BenchmarkFleet: several client processes share one bucket whose write
// capacity is C object writes a second, as a fleet of services shares a GCS
// bucket. Each case starts fakes/cmd/fakegcs afresh in another process
// (-write-rate C, its burst and per-name limit at their defaults), then P
// processes of integration/fleet at once, each with K uploads of 4 KiB in
// flight for the duration, waits for them, and reads the fake's counts
// (GET /_objup/stats) every 250 ms meanwhile. The window is the duration
// from the first process's start. It reports
//
//	stored/C     objects stored in the window (by all processes but the
//	             quiet tenant's) a second, over C
//	attempts/C   writes that reached the capacity in the window (admitted or
//	             refused) a second, over C
//	failed       failed uploads, all processes
//	p50-ms ...   the worst process's p50, p99 and maximum latency, of every
//	             upload, the window's and those still in flight at its end
//	drain-s      how long after the window the last upload ended
//	quiet-*      in the tenant cases, the quiet tenant's stored/C, p99 and max
//	offered/C    with the capacity off, what stored/C would be
//
// and logs each case's refusals, each process's figures and the first
// error of each code. The fake's bucket starts full (a second's worth of
// writes), so a window of D seconds admits C*D+C writes: stored/C reaches
// 1+1/D (1.04 at 25 s) with no capacity lost.
//
// The clients: objup with its admission stage, objup without it
// (experimental.WithoutAdmission), and the official client's gRPC writer: with
// ChunkSize 0 ("official": each object in one request, with no copy kept,
// so that a retry carries no data and fails) and, under a precondition,
// with 256 KiB chunks ("official-256KiB": still one request for 4 KiB, and
// a retry resends it). The policies: the default, and ifnew (a DoesNotExist
// precondition, which makes every upload retryable). Besides, UploadMany in
// batches of 256; a ramp (an eighth of K at first, doubled every quarter);
// and two tenants in their own processes: "noisy" in three processes of 64,
// "quiet" one upload at a time in a fourth, beside the quiet tenant alone.
// Over loopback with K=64 the offered load is tens of times C (see the
// capacity=off cases); the cases under rtt=10ms put a 10 ms path in front
// of the fake (fakegcs -rtt) and 6 uploads in flight per process, so that
// the offered load is about 2x and 4x C at the default C.
//
//	go test -run '^$' -bench Fleet -benchtime 1x -count 1 -timeout 60m ./integration/
//
// OBJUP_FLEET_CAPACITY sets C (default 500) and OBJUP_FLEET_DURATION the
// duration of each case (default 25s).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fleetBins builds fakes/cmd/fakegcs and integration/fleet once, into a
// temporary directory, and returns their paths.
var fleetBins = sync.OnceValues(func() ([2]string, error) {
	dir, err := os.MkdirTemp("", "objup-fleet")
	if err != nil {
		return [2]string{}, err
	}
	out, err := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
		"github.com/objup/objup/fakes/cmd/fakegcs", "github.com/objup/objup/integration/fleet").CombinedOutput()
	if err != nil {
		return [2]string{}, fmt.Errorf("go build fakegcs fleet: %v\n%s", err, out)
	}
	return [2]string{filepath.Join(dir, "fakegcs"), filepath.Join(dir, "fleet")}, nil
})

// fleetGroup is n fleet processes with the same flags.
type fleetGroup struct {
	n     int
	quiet bool // the quiet tenant, reported apart
	args  []string
}

// fleetCase is one run of the fleet.
type fleetCase struct {
	name   string
	noCap  bool          // no capacity: the offered load
	rtt    time.Duration // fakegcs -rtt
	groups []fleetGroup
}

// fleetReport is the line a fleet process prints.
type fleetReport struct {
	Client         string            `json:"client"`
	Tenant         string            `json:"tenant"`
	Started        int64             `json:"started"`
	Stored         int64             `json:"stored"`
	StoredInTime   int64             `json:"storedInTime"`
	Failed         map[string]int64  `json:"failed"`
	OutcomeUnknown int64             `json:"outcomeUnknown"`
	Errors         map[string]string `json:"errors"`
	P50ms          float64           `json:"p50ms"`
	P99ms          float64           `json:"p99ms"`
	MaxMs          float64           `json:"maxms"`
	WallSec        float64           `json:"wallSec"`
	Start          time.Time         `json:"start"`
}

// fleetCounts are a bucket's or a tenant's counts in fakegcs's stats.
type fleetCounts struct {
	Admitted          int64 `json:"admitted"`
	RateLimited       int64 `json:"rateLimited"`
	Unavailable       int64 `json:"unavailable"`
	ObjectRateLimited int64 `json:"objectRateLimited"`
}

func (c fleetCounts) attempts() int64 {
	return c.Admitted + c.RateLimited + c.Unavailable + c.ObjectRateLimited
}

// fleetBucket is a bucket's counts in fakegcs's stats.
type fleetBucket struct {
	Bucket  string `json:"bucket"`
	Tenants []struct {
		Tenant string `json:"tenant"`
		fleetCounts
	} `json:"tenants"`
	fleetCounts
}

// fleetStats is the capacity part of fakegcs's GET /_objup/stats.
type fleetStats struct {
	Capacity []fleetBucket `json:"capacity"`
}

// fleetSample is benchBucket's counts at a time.
type fleetSample struct {
	at time.Time
	fleetBucket
}

// fleetSamples are benchBucket's counts read while the fleet ran, in time
// order.
type fleetSamples []fleetSample

// at returns the counts at t, interpolated between the samples around it.
func (s fleetSamples) at(t time.Time) fleetCounts {
	i, _ := slices.BinarySearchFunc(s, t, func(e fleetSample, t time.Time) int { return e.at.Compare(t) })
	switch {
	case len(s) == 0:
		return fleetCounts{}
	case i == 0:
		return s[0].fleetCounts
	case i == len(s):
		return s[len(s)-1].fleetCounts
	}
	lo, hi := s[i-1], s[i]
	f := float64(t.Sub(lo.at)) / float64(hi.at.Sub(lo.at))
	mix := func(a, b int64) int64 { return a + int64(f*float64(b-a)) }
	return fleetCounts{
		Admitted:          mix(lo.Admitted, hi.Admitted),
		RateLimited:       mix(lo.RateLimited, hi.RateLimited),
		Unavailable:       mix(lo.Unavailable, hi.Unavailable),
		ObjectRateLimited: mix(lo.ObjectRateLimited, hi.ObjectRateLimited),
	}
}

// last returns the last sample's counts.
func (s fleetSamples) last() fleetBucket {
	if len(s) == 0 {
		return fleetBucket{}
	}
	return s[len(s)-1].fleetBucket
}

func BenchmarkFleet(b *testing.B) {
	capacity := 500.0
	if v := os.Getenv("OBJUP_FLEET_CAPACITY"); v != "" {
		c, err := strconv.ParseFloat(v, 64)
		if err != nil || c <= 0 {
			b.Fatalf("OBJUP_FLEET_CAPACITY=%q: want writes a second", v)
		}
		capacity = c
	}
	duration := 25 * time.Second
	if v := os.Getenv("OBJUP_FLEET_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("OBJUP_FLEET_DURATION=%q: want a duration", v)
		}
		duration = d
	}
	bins, err := fleetBins()
	if err != nil {
		b.Fatal(err)
	}
	for _, fc := range fleetCases() {
		b.Run(fc.name, func(b *testing.B) {
			for range b.N {
				runFleet(b, bins, fc, capacity, duration)
			}
		})
	}
}

// fleetCases lists BenchmarkFleet's cases.
func fleetCases() []fleetCase {
	k := func(n int) []string { return []string{"-inflight", strconv.Itoa(n)} }
	// The clients by case name: "official" sends each object in one
	// request (ChunkSize 0) and keeps no copy to retry with;
	// "official-256KiB" buffers the object (ChunkSize 256 KiB, still one
	// request for 4 KiB) and retries it under a precondition.
	cl := func(c string, more ...string) []string {
		args := []string{"-client", c}
		if c == "official-256KiB" {
			args = []string{"-client", "official", "-chunk", strconv.Itoa(256 << 10)}
		}
		return append(args, more...)
	}
	var cs []fleetCase
	add := func(name string, noCap bool, rtt time.Duration, groups ...fleetGroup) {
		cs = append(cs, fleetCase{name: name, noCap: noCap, rtt: rtt, groups: groups})
	}
	// clients returns the clients a policy is run with: without a
	// precondition, the official client retries no upload whatever its
	// chunk size.
	clients := func(policy string) []string {
		if policy == "ifnew" {
			return []string{"objup", "objup-noadmission", "official", "official-256KiB"}
		}
		return []string{"objup", "objup-noadmission", "official"}
	}
	policyArgs := func(policy string) []string {
		if policy == "ifnew" {
			return []string{"-ifnew"}
		}
		return nil
	}

	// Over loopback, 4 processes of 64: the offered load, then every
	// client and policy against the capacity.
	for _, c := range []string{"objup", "official"} {
		add("P=4xK=64/capacity=off/client="+c, true, 0, fleetGroup{n: 4, args: append(cl(c), k(64)...)})
	}
	for _, policy := range []string{"default", "ifnew"} {
		for _, c := range clients(policy) {
			add("P=4xK=64/policy="+policy+"/client="+c, false, 0,
				fleetGroup{n: 4, args: append(cl(c, policyArgs(policy)...), k(64)...)})
		}
	}
	add("P=4xK=64/many=256/policy=default/client=objup", false, 0,
		fleetGroup{n: 4, args: append(cl("objup", "-many", "256"), k(64)...)})
	for _, c := range []string{"objup", "official-256KiB"} {
		add("P=4xK=64/ramp/policy=ifnew/client="+c, false, 0,
			fleetGroup{n: 4, args: append(cl(c, "-ramp", "-ifnew"), k(64)...)})
	}

	// Two tenants, each in its own processes, under a precondition.
	for _, c := range []string{"objup", "official", "official-256KiB"} {
		quiet := fleetGroup{n: 1, quiet: true, args: append(cl(c, "-ifnew", "-tenant", "quiet"), k(1)...)}
		add("tenants/quiet-alone/client="+c, false, 0, quiet)
		add("tenants/noisy=3xK=64+quiet=1xK=1/client="+c, false, 0,
			fleetGroup{n: 3, args: append(cl(c, "-ifnew", "-tenant", "noisy"), k(64)...)}, quiet)
	}

	// Behind a 10 ms path, few uploads in flight: about 2x and 4x C at
	// the default 500 a second, as the capacity=off cases measure.
	const rtt = 10 * time.Millisecond
	for _, p := range []int{2, 4} {
		pk := fmt.Sprintf("rtt=10ms/P=%dxK=6", p)
		add(pk+"/capacity=off/client=objup", true, rtt, fleetGroup{n: p, args: append(cl("objup"), k(6)...)})
		for _, policy := range []string{"default", "ifnew"} {
			for _, c := range clients(policy) {
				add(pk+"/policy="+policy+"/client="+c, false, rtt,
					fleetGroup{n: p, args: append(cl(c, policyArgs(policy)...), k(6)...)})
			}
		}
	}
	return cs
}

// runFleet runs one case: a fresh fakegcs, the fleet's processes at once,
// and the metrics.
func runFleet(b *testing.B, bins [2]string, fc fleetCase, capacity float64, duration time.Duration) {
	b.StopTimer()
	var args []string
	if !fc.noCap {
		args = append(args, "-write-rate", strconv.FormatFloat(capacity, 'f', -1, 64))
	}
	if fc.rtt > 0 {
		args = append(args, "-rtt", fc.rtt.String())
	}
	fake := startFleetFake(b, bins[0], args...)
	defer fake.stop(b)

	type proc struct {
		cmd            *exec.Cmd
		quiet          bool
		stdout, stderr bytes.Buffer
	}
	var procs []*proc
	for gi, g := range fc.groups {
		for i := range g.n {
			p := &proc{quiet: g.quiet}
			p.cmd = exec.Command(bins[1], append([]string{"-grpc", fake.grpc, "-bucket", benchBucket,
				"-duration", duration.String(), "-prefix", fmt.Sprintf("g%d-p%d", gi, i)}, g.args...)...)
			p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
			procs = append(procs, p)
		}
	}
	samples := fake.sample(b)
	b.StartTimer()
	for _, p := range procs {
		if err := p.cmd.Start(); err != nil {
			b.Fatal(err)
		}
	}
	// A process ends at most a minute after the duration (its uploads'
	// contexts end then); give it half a minute more, then kill it.
	deadline := time.Now().Add(duration + 90*time.Second)
	var reports []fleetReport
	var quiet *fleetReport
	for _, p := range procs {
		err := waitUntil(p.cmd, deadline)
		if err != nil {
			b.Fatalf("fleet %v: %v\n%s", p.cmd.Args[1:], err, p.stderr.Bytes())
		}
		var r fleetReport
		if err := json.Unmarshal(p.stdout.Bytes(), &r); err != nil {
			b.Fatalf("fleet %v printed %q: %v", p.cmd.Args[1:], p.stdout.Bytes(), err)
		}
		if p.quiet {
			quiet = &r
		} else {
			reports = append(reports, r)
		}
	}
	b.StopTimer()
	counts := samples()

	all := reports
	if quiet != nil {
		all = append(slices.Clip(all), *quiet)
	}
	// The window: from the first process's start, for the duration.
	var from time.Time
	var wall float64
	for _, r := range all {
		if from.IsZero() || r.Start.Before(from) {
			from = r.Start
		}
		wall = max(wall, r.WallSec)
	}
	perC := func(n int64) float64 { return float64(n) / duration.Seconds() / capacity }

	var storedInTime, failed int64
	var p50, p99, maxMs float64
	for _, r := range reports {
		storedInTime += r.StoredInTime
		p50, p99, maxMs = max(p50, r.P50ms), max(p99, r.P99ms), max(maxMs, r.MaxMs)
	}
	for _, r := range all {
		failed += sum(r.Failed)
	}
	if len(reports) > 0 {
		if fc.noCap {
			b.ReportMetric(perC(storedInTime), "offered/C")
		} else {
			b.ReportMetric(perC(storedInTime), "stored/C")
		}
		b.ReportMetric(p50, "p50-ms")
		b.ReportMetric(p99, "p99-ms")
		b.ReportMetric(maxMs, "max-ms")
	}
	if q := quiet; q != nil {
		b.ReportMetric(perC(q.StoredInTime), "quiet-stored/C")
		b.ReportMetric(q.P99ms, "quiet-p99-ms")
		b.ReportMetric(q.MaxMs, "quiet-max-ms")
	}
	b.ReportMetric(float64(failed), "failed")
	b.ReportMetric(max(0, wall-duration.Seconds()), "drain-s")
	final := counts.last()
	if !fc.noCap {
		b.ReportMetric(perC(counts.at(from.Add(duration)).attempts()-counts.at(from).attempts()), "attempts/C")
	}
	b.Log(fleetNotes(fc, capacity, duration, wall, final, all))
}

// fleetNotes describes a run: the fake's counts at the end (all tenants,
// then each), each process's figures, and the first error of each code.
func fleetNotes(fc fleetCase, capacity float64, duration time.Duration, wall float64, final fleetBucket, all []fleetReport) string {
	var notes []string
	if !fc.noCap {
		c := final.fleetCounts
		refused := c.attempts() - c.Admitted
		notes = append(notes, fmt.Sprintf("C=%g/s, duration %v, last upload after %.1fs: %d writes admitted, %d refused (%.0f%%: %d 429, %d 503, %d per name)",
			capacity, duration, wall, c.Admitted, refused, 100*float64(refused)/float64(max(1, c.attempts())),
			c.RateLimited, c.Unavailable, c.ObjectRateLimited))
		for _, t := range final.Tenants {
			notes = append(notes, fmt.Sprintf("tenant %q: %d admitted, %d refused", t.Tenant, t.Admitted, t.attempts()-t.Admitted))
		}
	}
	firstErr := map[string]string{}
	for _, r := range all {
		for code, e := range r.Errors {
			if _, ok := firstErr[code]; !ok {
				firstErr[code] = e
			}
		}
		notes = append(notes, fmt.Sprintf("%s%s: started %d, stored %d (%d in time), failed %d %v, outcome unknown %d, p50 %.1f p99 %.1f max %.1f ms, last after %.1fs",
			r.Client, tenantNote(r.Tenant), r.Started, r.Stored, r.StoredInTime, sum(r.Failed), r.Failed, r.OutcomeUnknown, r.P50ms, r.P99ms, r.MaxMs, r.WallSec))
	}
	for _, code := range slices.Sorted(maps.Keys(firstErr)) {
		notes = append(notes, fmt.Sprintf("first %s: %s", code, firstErr[code]))
	}
	return strings.Join(notes, "\n")
}

func tenantNote(t string) string {
	if t == "" {
		return ""
	}
	return " (tenant " + t + ")"
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// waitUntil waits for cmd to exit, and kills it at deadline.
func waitUntil(cmd *exec.Cmd, deadline time.Time) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Until(deadline)):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("still running at its deadline: killed")
	}
}

// fleetFake is a fakegcs process.
type fleetFake struct {
	cmd        *exec.Cmd
	grpc, http string
	stderr     syncBuffer
}

// syncBuffer is a bytes.Buffer for a process's output, read while the
// process may still write.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// startFleetFake runs fakegcs with bucket benchBucket and the flags args,
// on loopback, and waits for its addresses. Its standard error (the counts
// it prints at exit) is kept for a failure's message.
func startFleetFake(b *testing.B, bin string, args ...string) *fleetFake {
	f := &fleetFake{}
	f.cmd = exec.Command(bin, append([]string{"-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0", "-bucket", benchBucket}, args...)...)
	stdout, err := f.cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	f.cmd.Stderr = &f.stderr
	if err := f.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	addrs := make(chan [2]string, 1)
	go func() {
		var a [2]string
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "grpc "); ok {
				a[0] = v
			}
			if v, ok := strings.CutPrefix(sc.Text(), "http "); ok {
				a[1] = v
			}
			if a[0] != "" && a[1] != "" {
				addrs <- a
				_, _ = io.Copy(io.Discard, stdout)
				return
			}
		}
		close(addrs)
	}()
	select {
	case a, ok := <-addrs:
		if ok {
			f.grpc, f.http = a[0], a[1]
			return f
		}
	case <-time.After(30 * time.Second):
	}
	_ = f.cmd.Process.Kill()
	_ = f.cmd.Wait()
	b.Fatalf("fakegcs %v did not print its addresses:\n%s", args, f.stderr.String())
	return nil
}

// sample reads the fake's counts of benchBucket now and every 250 ms until
// the returned function is called, which reads them once more and returns
// them all.
func (f *fleetFake) sample(b *testing.B) func() fleetSamples {
	c := &http.Client{Timeout: 10 * time.Second}
	read := func() (fleetSample, error) {
		at := time.Now()
		resp, err := c.Get(f.http + "/_objup/stats")
		if err != nil {
			return fleetSample{}, err
		}
		defer resp.Body.Close()
		var s fleetStats
		if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
			return fleetSample{}, fmt.Errorf("GET /_objup/stats: %v", err)
		}
		// The counts are as of the middle of the call.
		sample := fleetSample{at: at.Add(time.Since(at) / 2)}
		for _, bs := range s.Capacity {
			if bs.Bucket == benchBucket {
				sample.fleetBucket = bs
			}
		}
		return sample, nil
	}
	var (
		samples fleetSamples
		err     error
	)
	first, err := read() // before any write: zero
	if err != nil {
		b.Fatal(err)
	}
	samples = append(samples, first)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			s, e := read()
			if e != nil {
				err = e
				return
			}
			samples = append(samples, s)
		}
	}()
	return func() fleetSamples {
		close(stop)
		<-done
		if err != nil {
			b.Fatal(err)
		}
		s, err := read()
		if err != nil {
			b.Fatal(err)
		}
		return append(samples, s)
	}
}

// stop ends the fake (SIGTERM, then a kill after 10 seconds) and fails b
// if it did not exit cleanly.
func (f *fleetFake) stop(b *testing.B) {
	_ = f.cmd.Process.Signal(syscall.SIGTERM)
	if err := waitUntil(f.cmd, time.Now().Add(10*time.Second)); err != nil {
		b.Errorf("fakegcs: %v\n%s", err, f.stderr.String())
	}
}
