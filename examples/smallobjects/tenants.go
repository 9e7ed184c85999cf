package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/api/option"

	"github.com/objup/objup/uploader"
)

// The uploader's metrics and attributes that the per-tenant summary reads
// (see [uploader.Telemetry.MeterProvider]).
const (
	metricUploads  = "objup.uploads"
	metricSize     = "objup.upload.size"
	metricDuration = "objup.upload.duration"
	metricRetries  = "objup.upload.retries"
	metricResumes  = "objup.upload.resumes"

	attrResult = "objup.result"
	attrPath   = "objup.path"
	attrTenant = "objup.tenant"

	resultOK      = "ok"
	pathResumable = "resumable"
)

// maxTenantRows bounds the tenants the text summary lists; -json has them
// all.
const maxTenantRows = 10

// tenantSummary is one tenant's part of the summary, read from the client's
// OpenTelemetry metrics, not counted by the program.
type tenantSummary struct {
	// Tenant is the objup.tenant attribute; "" for uploads without one.
	Tenant string `json:"tenant"`
	// Objects and Bytes count the uploads that stored their object
	// (objup.uploads and objup.upload.size with objup.result "ok");
	// Resumable counts those of them that took the resumable path.
	Objects   int64 `json:"objects"`
	Bytes     int64 `json:"bytes"`
	Resumable int64 `json:"resumable"`
	// Failed counts the uploads with any other result.
	Failed int64 `json:"failed"`
	// Retries and Resumes are objup.upload.retries and
	// objup.upload.resumes, over every upload.
	Retries int64 `json:"retries"`
	Resumes int64 `json:"resumes"`
	// The duration of the uploads that stored their object
	// (objup.upload.duration): the mean, and the median and 95th
	// percentile estimated from the histogram's buckets.
	MeanMS float64 `json:"mean_ms"`
	P50MS  float64 `json:"p50_ms"`
	P95MS  float64 `json:"p95_ms"`

	durations histogram
}

// histogram is the merged objup.upload.duration of one tenant's successful
// uploads, in seconds.
type histogram struct {
	bounds   []float64
	counts   []uint64
	count    uint64
	sum      float64
	min, max float64
}

func (h *histogram) add(p metricdata.HistogramDataPoint[float64]) {
	if h.counts == nil {
		h.bounds = p.Bounds
		h.counts = make([]uint64, len(p.BucketCounts))
		h.min, h.max = math.Inf(1), math.Inf(-1)
	}
	if !slices.Equal(h.bounds, p.Bounds) || len(h.counts) != len(p.BucketCounts) {
		return // the uploader uses one set of bounds: never happens
	}
	for i, c := range p.BucketCounts {
		h.counts[i] += c
	}
	h.count += p.Count
	h.sum += p.Sum
	if v, ok := p.Min.Value(); ok {
		h.min = min(h.min, v)
	}
	if v, ok := p.Max.Value(); ok {
		h.max = max(h.max, v)
	}
}

// quantile estimates the q-th quantile (0 < q <= 1) as Prometheus's
// histogram_quantile does: linearly within the bucket that holds it, the
// first bucket starting at the smallest value seen and the last ending at
// the largest.
func (h *histogram) quantile(q float64) float64 {
	if h.count == 0 {
		return 0
	}
	rank := q * float64(h.count)
	var below uint64
	for i, c := range h.counts {
		if c == 0 || float64(below+c) < rank {
			below += c
			continue
		}
		lo, hi := h.min, h.max
		if i > 0 {
			lo = max(lo, h.bounds[i-1])
		}
		if i < len(h.bounds) {
			hi = min(hi, h.bounds[i])
		}
		v := lo + (hi-lo)*(rank-float64(below))/float64(c)
		return min(max(v, h.min), h.max)
	}
	return h.max
}

// newMeterProvider returns the MeterProvider the client records into and the
// reader the summary collects from.
func newMeterProvider() (*sdkmetric.MeterProvider, *sdkmetric.ManualReader) {
	reader := sdkmetric.NewManualReader()
	return sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), reader
}

// tenantAttribute is the client's uploader.Telemetry.TenantAttribute: every
// tenant is its own attribute value. A service with many tenants would map
// them to few values instead (each value is a time series).
func tenantAttribute(tenant string) (string, bool) { return tenant, true }

// clientTelemetry are the client options that record the metrics the
// per-tenant summary reads.
func clientTelemetry(mp *sdkmetric.MeterProvider) []option.ClientOption {
	return []option.ClientOption{uploader.WithTelemetry(uploader.Telemetry{MeterProvider: mp}), uploader.WithTelemetry(uploader.Telemetry{TenantAttribute: tenantAttribute})}
}

// tenantsFrom collects the uploader's metrics from reader and returns them
// per tenant, in the tenants' natural order (t2 before t10).
func tenantsFrom(ctx context.Context, reader *sdkmetric.ManualReader) ([]tenantSummary, error) {
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		return nil, err
	}
	byTenant := map[string]*tenantSummary{}
	of := func(set attribute.Set) (*tenantSummary, bool) {
		tenant, _ := set.Value(attrTenant)
		t := byTenant[tenant.AsString()]
		if t == nil {
			t = &tenantSummary{Tenant: tenant.AsString()}
			byTenant[t.Tenant] = t
		}
		result, _ := set.Value(attrResult)
		return t, result.AsString() == resultOK
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch m.Name {
			case metricUploads, metricRetries, metricResumes, metricSize, metricDuration:
			default:
				continue // the pool's gauges: no tenant
			}
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range data.DataPoints {
					t, ok := of(p.Attributes)
					switch m.Name {
					case metricUploads:
						if !ok {
							t.Failed += p.Value
							break
						}
						t.Objects += p.Value
						if path, _ := p.Attributes.Value(attrPath); path.AsString() == pathResumable {
							t.Resumable += p.Value
						}
					case metricRetries:
						t.Retries += p.Value
					case metricResumes:
						t.Resumes += p.Value
					}
				}
			case metricdata.Histogram[int64]: // objup.upload.size
				for _, p := range data.DataPoints {
					if t, ok := of(p.Attributes); ok {
						t.Bytes += p.Sum
					}
				}
			case metricdata.Histogram[float64]: // objup.upload.duration
				for _, p := range data.DataPoints {
					if t, ok := of(p.Attributes); ok {
						t.durations.add(p)
					}
				}
			}
		}
	}
	out := make([]tenantSummary, 0, len(byTenant))
	for _, t := range byTenant {
		if h := &t.durations; h.count > 0 {
			t.MeanMS = ms3(h.sum / float64(h.count))
			t.P50MS = ms3(h.quantile(0.5))
			t.P95MS = ms3(h.quantile(0.95))
		}
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b tenantSummary) int { return naturalCompare(a.Tenant, b.Tenant) })
	return out, nil
}

// ms3 converts seconds to milliseconds, to the microsecond.
func ms3(s float64) float64 { return math.Round(s*1e6) / 1e3 }

// naturalCompare orders strings with their runs of digits compared as
// numbers: t2 before t10.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := len(na) - len(nb); c != 0 {
				return c
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return int(a[0]) - int(b[0])
		}
		a, b = a[1:], b[1:]
	}
	return len(a) - len(b)
}

func digits(s string) int {
	n := 0
	for n < len(s) && '0' <= s[n] && s[n] <= '9' {
		n++
	}
	return n
}

// tenantNames returns the tenants -tenants n spreads the objects over.
func tenantNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = "t" + strconv.Itoa(i)
	}
	return names
}

// spreadTenants gives item i the tenant names[i % len(names)].
func (b *batch) spreadTenants(names []string) {
	for i := range b.items {
		b.items[i].Tenant = names[i%len(names)]
	}
}

// Column widths of the per-tenant table: it fits the 67 columns after the
// summary's labels.
const tenantWidth = 10

// writeTenants adds the per-tenant part to a text summary.
func (s *summary) writeTenants(b *textSummary) {
	if len(s.ByTenant) == 0 {
		return
	}
	b.line("by tenant", "from the client's OpenTelemetry metrics (a ManualReader):")
	row := func(cols ...any) {
		b.WriteString(strings.Repeat(" ", labelWidth))
		b.WriteString(strings.TrimRight(fmt.Sprintf("%-*s %7v %9v %6v %7v %7v %7v %7v", append([]any{tenantWidth}, cols...)...), " "))
		b.WriteByte('\n')
	}
	row("tenant", "objects", "bytes", "failed", "retries", "p50 ms", "p95 ms", "mean ms")
	for _, t := range s.ByTenant[:min(len(s.ByTenant), maxTenantRows)] {
		row(clip(t.Tenant, tenantWidth), t.Objects, formatSI(t.Bytes), t.Failed, t.Retries,
			fmt.Sprintf("%.2f", t.P50MS), fmt.Sprintf("%.2f", t.P95MS), fmt.Sprintf("%.2f", t.MeanMS))
	}
	if more := len(s.ByTenant) - maxTenantRows; more > 0 {
		b.line("", "... and %d more tenants (all of them with -json)", more)
	}
}

// clip shortens a tenant to width columns for the table, "(none)" for no
// tenant.
func clip(tenant string, width int) string {
	if tenant == "" {
		return "(none)"
	}
	if utf8.RuneCountInString(tenant) <= width {
		return tenant
	}
	r := []rune(tenant)
	return string(r[:width-3]) + "..."
}
