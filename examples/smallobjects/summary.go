package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime/metrics"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader"
)

// maxErrors bounds the errors a summary lists; ErrorCount has them all.
const maxErrors = 20

// summary is what a run prints: as text, or as one JSON object with -json.
type summary struct {
	OK bool `json:"ok"`

	Target   string `json:"target"` // embedded-fake, emulator or gcs
	Endpoint string `json:"endpoint,omitempty"`
	Bucket   string `json:"bucket"`
	Prefix   string `json:"prefix"`
	Source   string `json:"source"` // generated or dir
	Dir      string `json:"dir,omitempty"`
	Seed     uint64 `json:"seed,omitempty"`
	Tenant   string `json:"tenant,omitempty"`
	// Tenants is -tenants: the objects went to tenants t0 to t(Tenants-1).
	Tenants int `json:"tenants,omitempty"`

	Concurrency int `json:"concurrency"`
	// Buffers is pool or caller; with caller, CallerBuffers buffers of
	// CallerBufferBytes each.
	Buffers           string `json:"buffers"`
	CallerBuffers     int    `json:"caller_buffers,omitempty"`
	CallerBufferBytes int    `json:"caller_buffer_bytes,omitempty"`
	GOMAXPROCS        int    `json:"gomaxprocs"`

	// Objects were given to UploadMany; Uploaded succeeded; Failed counts
	// failed items and, with -dir, files that could not be listed.
	// Skipped counts -dir entries that are not regular files.
	Objects  int   `json:"objects"`
	Uploaded int   `json:"uploaded"`
	Failed   int   `json:"failed"`
	Skipped  int   `json:"skipped,omitempty"`
	Bytes    int64 `json:"bytes"`

	Seconds          float64 `json:"seconds"`
	ObjectsPerSecond float64 `json:"objects_per_second"`
	// PaceByTenth is the objects/s of each tenth of the objects, in the
	// order their results came (runs of 10 objects or more that finished);
	// PaceRatio is the last tenth's over the first's.
	PaceByTenth []float64 `json:"objects_per_second_by_tenth,omitempty"`
	PaceRatio   float64   `json:"pace_last_to_first,omitempty"`
	MBPerSecond float64   `json:"mb_per_second"`
	LatencyMS   latency   `json:"latency_ms"`
	Memory      memory    `json:"memory"`
	Pool        poolUse   `json:"pool"`

	// ByTenant is the per-tenant part, from the client's OpenTelemetry
	// metrics.
	ByTenant []tenantSummary `json:"by_tenant"`
	// Noisy is what -noisy-tenant's uploads did meanwhile.
	Noisy *noisySummary `json:"noisy,omitempty"`
	// Admission is what pushback did (-write-rate, -admission=false).
	Admission   *admissionSummary `json:"admission,omitempty"`
	TenantCalls *tenantCalls      `json:"tenant_calls,omitempty"`

	// Hint suggests a cause when errors share a likely one.
	Hint       string       `json:"hint,omitempty"`
	ErrorCount int          `json:"error_count"`
	Errors     []itemError  `json:"errors,omitempty"`
	SkippedAt  []string     `json:"skipped_paths,omitempty"`
	Verify     verification `json:"verification"`
}

// latency are percentiles of Result.Duration over the successful uploads,
// in milliseconds.
type latency struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// memory is the heap activity during UploadMany, of the whole process. Scope
// says whose work that is: with the embedded fake, the client's and the
// fake server's together.
type memory struct {
	AllocBytes          uint64  `json:"alloc_bytes"`
	AllocBytesPerObject float64 `json:"alloc_bytes_per_object"`
	AllocsPerObject     float64 `json:"allocs_per_object"`
	GCCycles            uint64  `json:"gc_cycles"`
	Scope               string  `json:"scope"`
}

// poolUse is the client pool's counters during UploadMany (InUseBytes: at
// its end).
type poolUse struct {
	Gets        uint64 `json:"gets"`
	News        uint64 `json:"news"`
	Puts        uint64 `json:"puts"`
	Rejected    uint64 `json:"rejected"`
	BudgetWaits uint64 `json:"budget_waits"`
	InUseBytes  int64  `json:"in_use_bytes"`
}

// tenantCalls counts the embedded fake's calls that carried the run's
// tenant, or one of its tenants with -tenants.
type tenantCalls struct {
	WithTenant int `json:"with_tenant"`
	Total      int `json:"total"`
}

type itemError struct {
	Name  string `json:"name"`
	Error string `json:"error"`
}

// memSample reads the runtime's cumulative heap counters.
type memSample struct{ bytes, objects, gcs uint64 }

func readMem() memSample {
	s := []metrics.Sample{
		{Name: "/gc/heap/allocs:bytes"},
		{Name: "/gc/heap/allocs:objects"},
		{Name: "/gc/cycles/total:gc-cycles"},
	}
	metrics.Read(s)
	var m memSample
	if s[0].Value.Kind() == metrics.KindUint64 {
		m.bytes = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		m.objects = s[1].Value.Uint64()
	}
	if s[2].Value.Kind() == metrics.KindUint64 {
		m.gcs = s[2].Value.Uint64()
	}
	return m
}

func poolStats(a pool.Allocator) pool.Stats {
	if p, ok := a.(*pool.Pool); ok {
		return p.Stats()
	}
	return pool.Stats{}
}

func poolDelta(before, after pool.Stats) poolUse {
	return poolUse{
		Gets:        after.Gets - before.Gets,
		News:        after.News - before.News,
		Puts:        after.Puts - before.Puts,
		Rejected:    after.Rejected - before.Rejected,
		BudgetWaits: after.BudgetWaits - before.BudgetWaits,
		InUseBytes:  after.InUseBytes,
	}
}

// addPace records the objects/s of each tenth of the run.
func (s *summary) addPace(pace []float64) {
	s.PaceByTenth = pace
	if len(pace) > 0 && pace[0] > 0 {
		s.PaceRatio = math.Round(pace[len(pace)-1]/pace[0]*100) / 100
	}
}

// addResults fills the counts, throughput, latency and errors from the
// results of an UploadMany that took elapsed.
func (s *summary) addResults(objects []object, results []uploader.Result, elapsed time.Duration) {
	s.Objects = len(results)
	durations := make([]time.Duration, 0, len(results))
	for i, r := range results {
		if r.Err != nil {
			s.Failed++
			s.addError(r.Name, r.Err)
			continue
		}
		s.Uploaded++
		s.Bytes += objects[i].read
		durations = append(durations, r.Duration)
	}
	s.Seconds = elapsed.Seconds()
	if s.Seconds > 0 {
		s.ObjectsPerSecond = float64(s.Uploaded) / s.Seconds
		s.MBPerSecond = float64(s.Bytes) / 1e6 / s.Seconds
	}
	slices.Sort(durations)
	s.LatencyMS = latency{
		P50: ms(percentile(durations, 50)),
		P95: ms(percentile(durations, 95)),
		P99: ms(percentile(durations, 99)),
	}
	if n := len(durations); n > 0 {
		s.LatencyMS.Max = ms(durations[n-1])
	}
}

func (s *summary) addError(name string, err error) {
	if s.Hint == "" {
		switch {
		case uploader.CodeOf(err) == codes.NotFound:
			s.Hint = hintNotFound[s.Target]
		case uploader.CodeOf(err) == codes.PermissionDenied && s.Target == targetGCS.String():
			s.Hint = "the credentials may not write to the bucket; check gcloud auth application-default login and the bucket's IAM"
		}
	}
	s.ErrorCount++
	if len(s.Errors) < maxErrors {
		s.Errors = append(s.Errors, itemError{Name: name, Error: err.Error()})
	}
}

func (s *summary) addMemory(before, after memSample, scope string) {
	s.Memory = memory{
		AllocBytes: after.bytes - before.bytes,
		GCCycles:   after.gcs - before.gcs,
		Scope:      scope,
	}
	if s.Objects > 0 {
		s.Memory.AllocBytesPerObject = float64(after.bytes-before.bytes) / float64(s.Objects)
		s.Memory.AllocsPerObject = float64(after.objects-before.objects) / float64(s.Objects)
	}
}

// hintNotFound explains a NotFound error for each target.
var hintNotFound = map[string]string{
	targetFake.String():     "the embedded fake has only bucket " + defaultBucket,
	targetEmulator.String(): "the bucket does not exist on the emulator: create it (go run ./fakes/cmd/fakegcs -bucket NAME), or give -http-endpoint and the example creates it",
	targetGCS.String():      "the bucket does not exist, or these credentials cannot see it",
}

// percentile returns the nearest-rank p-th percentile of sorted d.
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(d)))) - 1
	return d[min(max(i, 0), len(d)-1)]
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

func (s *summary) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	return enc.Encode(s)
}

// textWidth is the width the text summary fits in.
const textWidth = 80

// labelWidth is the indent of a summary line's text after its label.
const labelWidth = 13

// textSummary builds the text summary: a title, then lines of a label and a
// text, the text wrapped to fit textWidth columns under a hanging indent.
type textSummary struct{ strings.Builder }

// line adds a labelled line; an empty label continues the previous one.
func (b *textSummary) line(label, format string, args ...any) {
	b.WriteString(wrap(fmt.Sprintf("  %-10s ", label), fmt.Sprintf(format, args...)))
}

// wrap lays text out after first, in lines of at most textWidth columns
// continued under an indent of labelWidth, breaking at spaces and cutting a
// word only when it alone is wider than a line.
func wrap(first, text string) string {
	var b strings.Builder
	b.WriteString(first)
	col, fresh := len(first), true // fresh: nothing on this line after the indent
	for _, word := range strings.Fields(text) {
		for len(word) > 0 {
			switch {
			case fresh:
			case col+1+len(word) <= textWidth:
				b.WriteByte(' ')
				col++
			default:
				b.WriteString("\n" + strings.Repeat(" ", labelWidth))
				col, fresh = labelWidth, true
			}
			n := min(len(word), textWidth-col)
			for n > 0 && n < len(word) && !utf8.RuneStart(word[n]) {
				n--
			}
			if n <= 0 {
				b.WriteString("\n" + strings.Repeat(" ", labelWidth))
				col, fresh = labelWidth, true
				continue
			}
			b.WriteString(word[:n])
			col += n
			fresh = false
			word = word[n:]
		}
	}
	b.WriteByte('\n')
	return b.String()
}

func (s *summary) writeText(w io.Writer) error {
	var b textSummary
	what := fmt.Sprintf("%d generated objects (seed %d)", s.Objects, s.Seed)
	if s.Source == "dir" {
		what = fmt.Sprintf("%d files from %s", s.Objects, s.Dir)
	}
	b.WriteString(wrap("objup smallobjects: ", what))
	where := "gs://" + s.Bucket + "/" + s.Prefix
	switch s.Target {
	case targetFake.String():
		where += " on the embedded fake GCS (gRPC " + s.Endpoint + ")"
	case targetEmulator.String():
		where += " on the emulator at " + s.Endpoint
	default:
		where += " on GCS"
	}
	b.line("target", "%s", where)
	bufs := "the client's pool"
	if s.Buffers == "caller" {
		bufs = fmt.Sprintf("%d caller buffers of %s", s.CallerBuffers, formatIEC(int64(s.CallerBufferBytes)))
	}
	settings := fmt.Sprintf("concurrency %d, buffers: %s, GOMAXPROCS %d", s.Concurrency, bufs, s.GOMAXPROCS)
	switch {
	case s.Tenant != "":
		settings += fmt.Sprintf(", tenant %q", s.Tenant)
	case s.Tenants == 1:
		settings += ", tenant t0"
	case s.Tenants > 1:
		settings += fmt.Sprintf(", tenants t0..t%d", s.Tenants-1)
	}
	b.line("settings", "%s", settings)
	b.line("upload", "%d ok, %d failed, %s in %.2fs: %.0f objects/s, %.1f MB/s",
		s.Uploaded, s.Failed, formatSI(s.Bytes), s.Seconds, s.ObjectsPerSecond, s.MBPerSecond)
	if s.Skipped > 0 {
		b.line("skipped", "%d entries that are not regular files", s.Skipped)
	}
	if len(s.PaceByTenth) > 0 {
		var rates []string
		for _, r := range s.PaceByTenth {
			rates = append(rates, fmt.Sprintf("%.0f", r))
		}
		b.line("pace", "objects/s by tenth of the run: %s; last/first %.2f", strings.Join(rates, " "), s.PaceRatio)
	}
	b.line("latency", "p50 %.2fms, p95 %.2fms, p99 %.2fms, max %.2fms",
		s.LatencyMS.P50, s.LatencyMS.P95, s.LatencyMS.P99, s.LatencyMS.Max)
	if n := s.Noisy; n != nil {
		turns := "tenants served in turn (-fair)"
		if !n.Fair {
			turns = "first come, first served (-fair=false)"
		}
		b.line("noisy", "tenant %q: %d uploads of %s at once: %s acknowledged, %.0f MB/s; pool budget %s, %s",
			noisyTenant, n.Concurrency, formatIEC(n.Size), formatSI(n.Bytes), n.MBPerSecond, formatIEC(n.Budget), turns)
	}
	if a := s.Admission; a != nil {
		stage := "on"
		if !a.On {
			stage = "off (-admission=false)"
		}
		capacity := "no limit"
		if a.WriteRate > 0 {
			capacity = fmt.Sprintf("%.0f writes/s (-write-rate): it admitted %d writes and refused %d", a.WriteRate, a.Admitted, a.Refused)
		}
		b.line("admission", "stage %s: learnt %.0f writes/s, %d writes waited their turn, %d refusals seen; the fake: %s",
			stage, a.LearnedRate, a.Waits, a.Rejections, capacity)
	}
	b.line("memory", "%s: %s and %.0f allocations per object, %d GC cycles",
		s.Memory.Scope, formatSI(int64(s.Memory.AllocBytesPerObject)), s.Memory.AllocsPerObject, s.Memory.GCCycles)
	b.line("pool", "%d gets, %d new buffers, %d puts, %d rejected, %d budget waits, %s in use",
		s.Pool.Gets, s.Pool.News, s.Pool.Puts, s.Pool.Rejected, s.Pool.BudgetWaits, formatIEC(s.Pool.InUseBytes))
	s.writeTenants(&b)
	if t := s.TenantCalls; t != nil {
		if s.Tenant != "" {
			b.line("tenant", "%d of %d calls to the fake carried tenant %q", t.WithTenant, t.Total, s.Tenant)
		} else {
			b.line("tenant", "%d of %d calls to the fake carried one of the run's tenants", t.WithTenant, t.Total)
		}
	}
	if s.ErrorCount > 0 {
		b.line("errors", "%d", s.ErrorCount)
		for _, e := range s.Errors {
			b.line("", "%s: %s", e.Name, e.Error)
		}
		if more := s.ErrorCount - len(s.Errors); more > 0 {
			b.line("", "... and %d more", more)
		}
		if s.Hint != "" {
			b.line("", "hint: %s", s.Hint)
		}
	}
	v := s.Verify
	switch v.Method {
	case verifyNone:
		if v.Passed {
			b.line("verify", "skipped (-verify=false)")
		} else {
			b.line("verify", "not done")
		}
	case verifyJSONAPI:
		b.line("verify", "%s: %d of %d uploaded objects verified (size and CRC32C), listed through the JSON API at %s; %d listed, %d missing, %d mismatched, %d unexpected",
			verdict(v.Passed), v.Verified, v.Expected, v.URL, v.Listed, v.Missing, v.Mismatched, v.Unexpected)
	case verifyResponses:
		b.line("verify", "%s: %d of %d uploaded objects verified (size and CRC32C) against the upload responses; %d missing, %d mismatched",
			verdict(v.Passed), v.Verified, v.Expected, v.Missing, v.Mismatched)
	}
	if v.Note != "" {
		b.line("", "note: %s", v.Note)
	}
	for _, p := range v.Problems {
		b.line("", "%s", p)
	}
	b.line("result", "%s", verdict(s.OK))
	_, err := io.WriteString(w, b.String())
	return err
}

func verdict(ok bool) string {
	if ok {
		return "OK"
	}
	return "FAILED"
}

// formatSI formats a byte count in decimal units (MB as in MB/s).
func formatSI(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}

// formatIEC formats a byte count in binary units, exactly when it can:
// 64KiB, 1MiB, 1536B.
func formatIEC(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.suffix)
		}
	}
	return fmt.Sprintf("%dB", n)
}
