// Command gcsload measures how a fake GCS scales with the number of
// objects it holds: it writes N small objects through the JSON API (simple
// media uploads, over keep-alive connections) with many concurrent
// writers, and at each milestone of the object count (1,000, 10,000, ...,
// N) pauses the writers to sample the server's resident memory and the
// cost of one create, one get and one listing page, each timed alone.
//
// Usage:
//
//	gcsload -http http://127.0.0.1:PORT -bucket NAME -pid PID
//	        [-n 10000000] [-size 1024] [-writers 32] [-max-time 45m] [-out FILE]
//
// With -probe-only it writes nothing and samples once a bucket that holds
// the -n objects of an earlier run, so that two servers (one with a
// thousand objects, one with ten million) are probed turn by turn, under
// the same load of the machine.
//
// -pid is the server's process, whose VmRSS is read from /proc; -max-time
// bounds the run: it stops writing then and reports how far it got. Each
// milestone is printed on standard output as one JSON line (and appended
// to -out); the last line sums the run up. Object names are spread over
// the name space ("dNN/HEX16", NN = i mod 100, HEX16 a hash of i), so
// that the store does not see them in order, and their content is random
// (a window of a 4 MiB random buffer at an offset of their own), so that
// it does not compress.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// sample is one milestone.
type sample struct {
	Label       string  `json:"label,omitempty"`
	Objects     int64   `json:"objects"`
	ElapsedS    float64 `json:"elapsed_s"`
	RatePerS    float64 `json:"rate_per_s"` // since the previous milestone
	RSSMiB      float64 `json:"rss_mib"`
	CreateP50Us float64 `json:"create_p50_us"`
	GetP50Us    float64 `json:"get_p50_us"`
	ListP50Us   float64 `json:"list_p50_us"` // a page of 100 objects from a random start
	DiskMiB     float64 `json:"disk_mib,omitempty"`
}

type summary struct {
	Objects   int64   `json:"objects_written"`
	ElapsedS  float64 `json:"elapsed_s"`
	RatePerS  float64 `json:"mean_rate_per_s"`
	Writers   int     `json:"writers"`
	Size      int     `json:"size"`
	Errors    int64   `json:"errors"`
	TimedOut  bool    `json:"stopped_by_max_time"`
	MaxRSSMiB float64 `json:"max_rss_mib"`
}

// name is the name of object i.
func name(i int64) string {
	x := uint64(i) + 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	x ^= x >> 31
	return fmt.Sprintf("d%02d/%016x", i%100, x)
}

type loader struct {
	base, bucket string
	client       *http.Client
	noise        []byte // random bytes, of which each object takes size at its own offset
	size         int
}

func (l *loader) create(ctx context.Context, n string, i int64) error {
	u := l.base + "/upload/storage/v1/b/" + l.bucket + "/o?uploadType=media&name=" + url.QueryEscape(n)
	off := i * 1031 % int64(len(l.noise)-l.size)
	req, _ := http.NewRequestWithContext(ctx, "POST", u, bytes.NewReader(l.noise[off:off+int64(l.size)]))
	req.Header.Set("Content-Type", "application/octet-stream")
	return l.do(req)
}

func (l *loader) get(ctx context.Context, n string) error {
	u := l.base + "/storage/v1/b/" + l.bucket + "/o/" + url.PathEscape(n) + "?alt=media"
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	return l.do(req)
}

func (l *loader) list(ctx context.Context, start string) error {
	u := l.base + "/storage/v1/b/" + l.bucket + "/o?maxResults=100&startOffset=" + url.QueryEscape(start)
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	return l.do(req)
}

func (l *loader) do(req *http.Request) error {
	resp, err := l.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %.200s", req.Method, req.URL.Path, resp.Status, b)
	}
	return nil
}

// rss returns the VmRSS of pid in MiB.
func rss(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return -1
}

// duSize returns the bytes of the files under dir, in MiB.
func duSize(dir string) float64 {
	if dir == "" {
		return 0
	}
	var total int64
	var walk func(string)
	walk = func(d string) {
		es, _ := os.ReadDir(d)
		for _, e := range es {
			if e.IsDir() {
				walk(d + "/" + e.Name())
			} else if fi, err := e.Info(); err == nil {
				total += fi.Size()
			}
		}
	}
	walk(dir)
	return float64(total) / (1 << 20)
}

func p50(ds []time.Duration) float64 {
	slices.Sort(ds)
	return float64(ds[len(ds)/2].Microseconds())
}

func run(args []string) int {
	fs := flag.NewFlagSet("gcsload", flag.ContinueOnError)
	base := fs.String("http", "", "the fake's JSON API `URL`")
	bucket := fs.String("bucket", "load", "the `bucket` to write to (it must exist)")
	pid := fs.Int("pid", 0, "the server's process `id`, for its RSS")
	n := fs.Int64("n", 10_000_000, "objects to write")
	size := fs.Int("size", 1024, "object size in bytes")
	writers := fs.Int("writers", 32, "concurrent writers")
	maxTime := fs.Duration("max-time", 45*time.Minute, "stop writing after this long")
	probes := fs.Int("probes", 200, "timed calls of each kind per milestone")
	first := fs.Int64("first", 0, "index of the first object (to continue a run)")
	out := fs.String("out", "", "append the JSON lines to `file` too")
	data := fs.String("data", "", "the server's data `DIR`, for its size on disk")
	label := fs.String("label", "", "a `label` for the samples")
	probeOnly := fs.Bool("probe-only", false, "write nothing: probe a bucket that holds the -n objects of an earlier run")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *base == "" {
		fmt.Fprintln(os.Stderr, "gcsload: -http is required")
		return 2
	}
	var outF io.Writer = io.Discard
	if *out != "" {
		f, err := os.OpenFile(*out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "gcsload:", err)
			return 1
		}
		defer f.Close()
		outF = f
	}
	emit := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Println(string(b))
		fmt.Fprintln(outF, string(b))
	}
	tr := &http.Transport{MaxIdleConns: *writers * 2, MaxIdleConnsPerHost: *writers * 2}
	l := &loader{base: strings.TrimSuffix(*base, "/"), bucket: *bucket,
		client: &http.Client{Transport: tr, Timeout: time.Minute}, noise: make([]byte, 4<<20+*size), size: *size}
	rand.Read(l.noise)
	ctx, cancel := context.WithTimeout(context.Background(), *maxTime)
	defer cancel()

	var (
		next     atomic.Int64 // the next object index to write
		done     atomic.Int64 // objects written
		errs     atomic.Int64
		pause    sync.RWMutex // writers hold it for reading; probes for writing
		maxRSS   float64
		start    = time.Now()
		lastT    = start
		lastDone int64
	)
	next.Store(*first)
	done.Store(*first)
	milestones := []int64{}
	for m := int64(1000); m <= *n; m *= 10 {
		if m > *first {
			milestones = append(milestones, m)
		}
		for _, k := range []int64{2, 5} {
			if m*k <= *n && m*k > *first && m*k < m*10 && m >= 1_000_000 {
				milestones = append(milestones, m*k)
			}
		}
	}
	slices.Sort(milestones)
	if len(milestones) == 0 || milestones[len(milestones)-1] != *n {
		milestones = append(milestones, *n)
	}
	probe := func() {
		d := done.Load()
		now := time.Now()
		s := sample{Label: *label, Objects: d, ElapsedS: now.Sub(start).Seconds(),
			RatePerS: float64(d-lastDone) / now.Sub(lastT).Seconds(), RSSMiB: rss(*pid), DiskMiB: duSize(*data)}
		maxRSS = max(maxRSS, s.RSSMiB)
		var cs, gs, ls []time.Duration
		for i := range *probes {
			t0 := time.Now()
			if err := l.create(context.Background(), fmt.Sprintf("probe/%d/%d/%d", d, start.UnixNano(), i), int64(i)); err != nil {
				errs.Add(1)
			}
			cs = append(cs, time.Since(t0))
			k := (int64(i)*7919 + d/3) % d
			t0 = time.Now()
			if err := l.get(context.Background(), name(k)); err != nil {
				errs.Add(1)
				fmt.Fprintln(os.Stderr, "gcsload: probe:", err)
			}
			gs = append(gs, time.Since(t0))
			t0 = time.Now()
			if err := l.list(context.Background(), name(k)); err != nil {
				errs.Add(1)
			}
			ls = append(ls, time.Since(t0))
		}
		s.CreateP50Us, s.GetP50Us, s.ListP50Us = p50(cs), p50(gs), p50(ls)
		emit(s)
		lastT, lastDone = time.Now(), d
	}

	if *probeOnly {
		done.Store(*n)
		lastDone = *n
		probe()
		return 0
	}
	var wg sync.WaitGroup
	mi := 0
	var probeMu sync.Mutex
	for range *writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				pause.RLock()
				i := next.Add(1) - 1
				if i >= *n {
					pause.RUnlock()
					return
				}
				err := l.create(ctx, name(i), i)
				pause.RUnlock()
				if err != nil {
					if ctx.Err() == nil {
						errs.Add(1)
						fmt.Fprintln(os.Stderr, "gcsload:", err)
					}
					continue
				}
				if d := done.Add(1); probeMu.TryLock() {
					// One writer at a time checks the milestones.
					if mi < len(milestones) && d >= milestones[mi] {
						for mi < len(milestones) && d >= milestones[mi] {
							mi++
						}
						pause.Lock()
						probe()
						pause.Unlock()
					}
					probeMu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	timedOut := ctx.Err() != nil && done.Load() < *n
	if mi < len(milestones) {
		probe()
	}
	el := time.Since(start).Seconds()
	emit(summary{Objects: done.Load() - *first, ElapsedS: el, RatePerS: float64(done.Load()-*first) / el,
		Writers: *writers, Size: *size, Errors: errs.Load(), TimedOut: timedOut, MaxRSSMiB: maxRSS})
	return 0
}
