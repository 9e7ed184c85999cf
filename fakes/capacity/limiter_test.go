package capacity_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/objup/objup/fakes/capacity"
)

// clock is a fake clock that moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// step is one step of a script: the clock moves by advance, then n writes
// (1 if n is 0) of object by tenant to bucket "b" must each get want; if
// rate is set, the bucket's rate must then be rate.
type step struct {
	advance time.Duration
	n       int
	object  string // "" means a new name for each write
	tenant  string
	want    capacity.Verdict
	rate    float64
}

const (
	ok   = capacity.Admitted
	r429 = capacity.RateLimited
	r503 = capacity.Unavailable
	name = capacity.ObjectRateLimited
)

// run plays steps against a Limiter for cfg on bucket "b".
func run(t *testing.T, cfg capacity.Config, steps []step) *capacity.Limiter {
	t.Helper()
	clk := newClock()
	l, err := capacity.New(capacity.WithBucket("b", cfg), capacity.WithClock(clk.now))
	if err != nil {
		t.Fatal(err)
	}
	fresh := 0
	for i, s := range steps {
		clk.advance(s.advance)
		for j := range max(s.n, 1) {
			obj := s.object
			if obj == "" {
				fresh++
				obj = fmt.Sprintf("o%d", fresh)
			}
			if got := l.Admit("b", obj, s.tenant); got != s.want {
				t.Fatalf("step %d, write %d of %q: %v, want %v", i, j+1, obj, got, s.want)
			}
		}
		if s.rate != 0 {
			if got := l.Stats()[0].Rate; got != s.rate {
				t.Fatalf("step %d: rate %v, want %v", i, got, s.rate)
			}
		}
	}
	return l
}

func TestLimiter(t *testing.T) {
	noNames := -1.0 // ObjectRate: no per-name limit
	ms := time.Millisecond
	cases := []struct {
		name  string
		cfg   capacity.Config
		steps []step
	}{
		{"burst, then refused", capacity.Config{Rate: 10, Burst: 3, ObjectRate: noNames}, []step{
			{n: 3, want: ok}, {n: 2, want: r429},
		}},
		{"refill at the rate, up to the burst", capacity.Config{Rate: 10, Burst: 3, ObjectRate: noNames}, []step{
			{n: 3, want: ok}, {want: r429},
			{advance: 100 * ms, want: ok}, {want: r429},
			{advance: 50 * ms, want: r429}, // half a token
			{advance: 50 * ms, want: ok}, {want: r429},
			{advance: 10 * time.Second, n: 3, want: ok}, {want: r429},
		}},
		{"default burst is a second's worth", capacity.Config{Rate: 5, ObjectRate: noNames}, []step{
			{n: 5, want: ok}, {want: r429},
		}},
		{"default burst of a slow bucket is 1", capacity.Config{Rate: 0.5, ObjectRate: noNames}, []step{
			{want: ok}, {want: r429}, {advance: time.Second, want: r429}, {advance: time.Second, want: ok},
		}},
		{"no rate: only names are limited", capacity.Config{}, []step{
			{n: 1000, want: ok},
			{object: "a", n: 2, want: ok}, {object: "a", want: name},
		}},
		{"per name: a write a second, a burst of 2", capacity.Config{Rate: 100}, []step{
			{object: "a", n: 2, want: ok}, {object: "a", n: 3, want: name},
			{object: "b", n: 2, want: ok},
			{advance: 500 * ms, object: "a", want: name},
			{advance: 500 * ms, object: "a", want: ok}, {object: "a", want: name},
			{advance: 10 * time.Second, object: "a", n: 2, want: ok}, {object: "a", want: name},
		}},
		{"per name: rate and burst set", capacity.Config{ObjectRate: 10, ObjectBurst: 1}, []step{
			{object: "a", want: ok}, {object: "a", want: name},
			{advance: 100 * ms, object: "a", want: ok}, {object: "a", want: name},
		}},
		{"a name's refusal takes no token of the bucket's", capacity.Config{Rate: 10, Burst: 3}, []step{
			{object: "a", n: 2, want: ok}, {object: "a", n: 5, want: name},
			{object: "b", want: ok}, {object: "c", want: r429},
		}},
		{"the bucket's refusal takes no token of the name's", capacity.Config{Rate: 1, ObjectBurst: 1}, []step{
			{object: "a", want: ok}, {object: "b", n: 3, want: r429},
			{advance: time.Second, object: "b", want: ok},
		}},
		{"share of 503: a half", capacity.Config{Rate: 1, Share503: 0.5, ObjectRate: noNames}, []step{
			{want: ok}, {want: r429}, {want: r503}, {want: r429}, {want: r503},
		}},
		{"share of 503: a quarter", capacity.Config{Rate: 1, Share503: 0.25, ObjectRate: noNames}, []step{
			{want: ok}, {n: 3, want: r429}, {want: r503}, {n: 3, want: r429}, {want: r503},
		}},
		{"share of 503: all", capacity.Config{Rate: 1, Share503: 1, ObjectRate: noNames}, []step{
			{want: ok}, {n: 3, want: r503},
		}},
		{"share of 503: names answer 429", capacity.Config{Rate: 100, Share503: 1}, []step{
			{object: "a", n: 2, want: ok}, {object: "a", n: 3, want: name},
		}},
		{"autoscaling after a saturated period", capacity.Config{Rate: 10, AutoscaleAfter: time.Second, ObjectRate: noNames}, []step{
			{n: 10, want: ok}, {want: r429, rate: 10}, // saturated from 0
			{advance: 500 * ms, n: 5, want: ok}, {want: r429, rate: 10},
			{advance: 500 * ms, n: 5, want: ok}, {want: r429, rate: 20}, // a second saturated: doubled, burst too
			{advance: 500 * ms, n: 10, want: ok}, {want: r429, rate: 20},
			{advance: 500 * ms, n: 10, want: ok}, {want: r429, rate: 40},
			{advance: time.Second, n: 40, want: ok}, {want: r429, rate: 40},
		}},
		{"autoscaling: a refilled bucket starts over", capacity.Config{Rate: 8, AutoscaleAfter: time.Second, ObjectRate: noNames}, []step{
			{n: 8, want: ok}, {want: r429},
			{advance: 2 * time.Second, n: 8, want: ok}, {want: r429, rate: 8}, // full at 2s: saturated from 2s
			{advance: 750 * ms, n: 6, want: ok}, {want: r429, rate: 8},
			{advance: 250 * ms, n: 2, want: ok}, {want: r429, rate: 16},
		}},
		{"autoscaling: factor and cap", capacity.Config{Rate: 10, AutoscaleAfter: 100 * ms, AutoscaleFactor: 3, AutoscaleMax: 50, ObjectRate: noNames}, []step{
			{n: 10, want: ok}, {want: r429},
			{advance: 100 * ms, want: ok}, {want: r429, rate: 30},
			{advance: 100 * ms, n: 3, want: ok}, {want: r429, rate: 50},
			{advance: 100 * ms, n: 5, want: ok}, {want: r429, rate: 50},
			{advance: 10 * time.Second, n: 50, want: ok}, {want: r429, rate: 50}, // the burst grew with the rate
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { run(t, c.cfg, c.steps) })
	}
}

func TestLimiterStats(t *testing.T) {
	l := run(t, capacity.Config{Rate: 4, Share503: 0.5}, []step{
		{tenant: "t1", n: 3, want: ok},
		{tenant: "t2", want: ok},
		{tenant: "t2", want: r429}, {tenant: "t1", want: r503},
		{advance: time.Second, object: "x", n: 2, want: ok},
		{object: "x", tenant: "t2", want: name},
	})
	want := []capacity.BucketStats{{
		Bucket: "b", Rate: 4, Burst: 4,
		Counts: capacity.Counts{Admitted: 6, RateLimited: 1, Unavailable: 1, ObjectRateLimited: 1},
		Tenants: []capacity.TenantStats{
			{Tenant: "", Counts: capacity.Counts{Admitted: 2}},
			{Tenant: "t1", Counts: capacity.Counts{Admitted: 3, Unavailable: 1}},
			{Tenant: "t2", Counts: capacity.Counts{Admitted: 1, RateLimited: 1, ObjectRateLimited: 1}},
		},
	}}
	if got := l.Stats(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Stats:\n got %+v\nwant %+v", got, want)
	}
	if got := l.Stats()[0].Refused(); got != 3 {
		t.Errorf("Refused() = %d, want 3", got)
	}
}

func TestLimiterBuckets(t *testing.T) {
	clk := newClock()
	l, err := capacity.New(
		capacity.WithAllBuckets(capacity.Config{Rate: 1, ObjectRate: -1}),
		capacity.WithBucket("big", capacity.Config{Rate: 3, ObjectRate: -1}),
		capacity.WithClock(clk.now))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		bucket string
		admit  int
	}{{"small", 1}, {"big", 3}, {"other", 1}} {
		for i := range c.admit + 1 {
			want := ok
			if i == c.admit {
				want = r429
			}
			if got := l.Admit(c.bucket, fmt.Sprint(i), ""); got != want {
				t.Errorf("%s, write %d: %v, want %v", c.bucket, i+1, got, want)
			}
		}
	}
	var names []string
	for _, b := range l.Stats() {
		names = append(names, fmt.Sprintf("%s:%d/%d", b.Bucket, b.Admitted, b.RateLimited))
	}
	if got := strings.Join(names, " "); got != "big:3/1 other:1/1 small:1/1" {
		t.Errorf("Stats: %s", got)
	}

	only, err := capacity.New(capacity.WithBucket("a", capacity.Config{Rate: 1}))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if got := only.Admit("b", "x", ""); got != ok {
			t.Fatalf("a bucket without capacity: %v", got)
		}
	}
	if st := only.Stats(); len(st) != 0 {
		t.Errorf("a bucket without capacity is counted: %+v", st)
	}
}

func TestConfigValidate(t *testing.T) {
	nan := 0.0
	nan /= nan
	cases := []struct {
		cfg  capacity.Config
		want string // "" for valid
	}{
		{capacity.Config{}, ""},
		{capacity.Config{Rate: 1000, Burst: 2000, AutoscaleAfter: time.Minute, AutoscaleFactor: 1.5, AutoscaleMax: 8000, ObjectRate: 2, ObjectBurst: 4, Share503: 0.1}, ""},
		{capacity.Config{ObjectRate: -1}, ""},
		{capacity.Config{Rate: -1}, "rate -1 is negative"},
		{capacity.Config{Rate: nan}, "rate NaN is not a number"},
		{capacity.Config{Rate: 1, Burst: -1}, "burst -1 is negative"},
		{capacity.Config{Burst: 3}, "burst 3 needs a rate"},
		{capacity.Config{Rate: 1, AutoscaleAfter: -1}, "autoscale-after -1ns is negative"},
		{capacity.Config{AutoscaleAfter: time.Second}, "autoscaling needs a rate"},
		{capacity.Config{Rate: 1, AutoscaleFactor: 1}, "autoscale factor 1 must be more than 1"},
		{capacity.Config{Rate: 10, AutoscaleMax: 5}, "autoscale max 5 is below the rate 10"},
		{capacity.Config{ObjectBurst: -2}, "object burst -2 is negative"},
		{capacity.Config{Share503: 1.5}, "share of 503 1.5 is not between 0 and 1"},
		{capacity.Config{Rate: -1, Share503: -1}, "rate -1 is negative; share of 503 -1"},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v", c.cfg, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
	_, err := capacity.New(capacity.WithAllBuckets(capacity.Config{Rate: -1}), capacity.WithBucket("x", capacity.Config{Share503: 2}))
	if err == nil || !strings.Contains(err.Error(), "every bucket: ") || !strings.Contains(err.Error(), `bucket "x": `) {
		t.Errorf("New: %v", err)
	}
}

// TestLimiterConcurrent admits from many goroutines at one instant: the
// bucket admits its burst and no more, and the counts add up.
func TestLimiterConcurrent(t *testing.T) {
	clk := newClock()
	l, err := capacity.New(capacity.WithAllBuckets(capacity.Config{Rate: 100, Burst: 150}), capacity.WithClock(clk.now))
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 100
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				l.Admit(fmt.Sprint("b", i%2), fmt.Sprint(w, "/", i), fmt.Sprint("t", w%3))
			}
		})
	}
	wg.Wait()
	for _, b := range l.Stats() {
		if b.Admitted != 150 || b.RateLimited != workers*each/2-150 {
			t.Errorf("%s: %+v", b.Bucket, b.Counts)
		}
		var sum int64
		for _, tn := range b.Tenants {
			sum += tn.Admitted + tn.Refused()
		}
		if sum != workers*each/2 {
			t.Errorf("%s: the tenants' counts add up to %d", b.Bucket, sum)
		}
	}
}

func TestVerdictString(t *testing.T) {
	for v, want := range map[capacity.Verdict]string{ok: "Admitted", r429: "RateLimited", r503: "Unavailable", name: "ObjectRateLimited", 9: "Verdict(9)"} {
		if got := v.String(); got != want {
			t.Errorf("%d: %q, want %q", v, got, want)
		}
	}
}
