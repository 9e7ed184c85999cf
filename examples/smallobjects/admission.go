package main

import (
	"context"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/fakes/capacity"
)

// admissionSummary is what pushback did: the embedded fake's write
// capacity and its counts (-write-rate), and the client's admission stage
// as its metrics tell (objup.admission.*).
type admissionSummary struct {
	// On is false with -admission=false (experimental.WithoutAdmission).
	On bool `json:"on"`
	// WriteRate is the fake's capacity, writes a second (-write-rate).
	WriteRate float64 `json:"write_rate,omitempty"`
	// Admitted and Refused are the fake's counts of object writes: the
	// attempts it took and those it refused (429 or 503 for the bucket's
	// rate, 429 for an object name's).
	Admitted int64 `json:"admitted,omitempty"`
	Refused  int64 `json:"refused,omitempty"`
	// LearnedRate is the rate the client's stage learnt for the bucket,
	// writes a second (0: the bucket never pushed back); Waits are the
	// writes that waited for their turn; Rejections the refusals the
	// client saw.
	LearnedRate float64 `json:"learned_rate"`
	Waits       int64   `json:"waits"`
	Rejections  int64   `json:"rejections"`
}

// fakeCapacity returns the embedded fake's options for -write-rate.
func fakeCapacity(cfg *config) []fakes.Option {
	if cfg.writeRate <= 0 {
		return nil
	}
	return []fakes.Option{fakes.WithCapacity(capacity.Config{Rate: cfg.writeRate})}
}

// admissionFrom reads the admission figures: the fake's counts (srv may be
// nil) and the client's metrics.
func admissionFrom(ctx context.Context, cfg *config, srv *fakes.Server, reader *sdkmetric.ManualReader) (*admissionSummary, error) {
	a := &admissionSummary{On: cfg.admission, WriteRate: cfg.writeRate}
	if srv != nil {
		for _, b := range srv.CapacityStats() {
			if b.Bucket == cfg.bucket {
				a.Admitted, a.Refused = b.Admitted, b.Refused()
			}
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		return a, err
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Gauge[float64]:
				if m.Name == "objup.admission.rate" {
					for _, p := range data.DataPoints {
						a.LearnedRate += p.Value
					}
				}
			case metricdata.Sum[int64]:
				for _, p := range data.DataPoints {
					switch m.Name {
					case "objup.admission.waits":
						a.Waits += p.Value
					case "objup.admission.rejections":
						a.Rejections += p.Value
					}
				}
			}
		}
	}
	return a, nil
}
