package main

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	in := `goos: linux
BenchmarkDistance/size=64MiB/rtt=0s/client=objup-2   	10	  1 ns/op	 856.0 MB/s	 3 cpu-s/GiB
BenchmarkDistance/size=64MiB/rtt=10ms/client=objup-2 	10	  1 ns/op	 283.0 MB/s
BenchmarkDistance/size=64MiB/rtt=10ms/client=objup-2 	10	  1 ns/op	 291.0 MB/s
BenchmarkDistance/size=64MiB/rtt=10ms/client=objup-2 	10	  1 ns/op	 250.0 MB/s
BenchmarkDistance/size=64MiB/rtt=10ms/client=official-2	10	  1 ns/op	 621.0 MB/s
BenchmarkDistanceMany/conc=512/rtt=20ms/client=objup-2	1	  1 ns/op	 8954 objects/s
BenchmarkUploadClientOnly/size=1KiB/client=objup-2	10	  1 ns/op	 6.8 MB/s
PASS
`
	panels, err := parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		panel, client, unit string
		rtt                 time.Duration
		want                float64
	}{
		{"Distance/size=64MiB", "objup", "MB/s", 0, 856},
		{"Distance/size=64MiB", "objup", "MB/s", 10 * time.Millisecond, 283}, // the median of three
		{"Distance/size=64MiB", "official", "MB/s", 10 * time.Millisecond, 621},
		{"DistanceMany/conc=512", "objup", "objects/s", 20 * time.Millisecond, 8954},
	} {
		var p *panel
		for _, x := range panels {
			if x.name == tc.panel {
				p = x
			}
		}
		if p == nil || p.unit != tc.unit {
			t.Fatalf("panel %q: %+v", tc.panel, p)
		}
		if got := median(p.series[tc.client][tc.rtt]); got != tc.want {
			t.Errorf("%s %s at %v: %v, want %v", tc.panel, tc.client, tc.rtt, got, tc.want)
		}
	}
	if len(panels) != 2 {
		t.Errorf("%d panels, want 2 (a benchmark without rtt= is left out)", len(panels))
	}
	var svg strings.Builder
	if err := render(&svg, "t", panels); err != nil || !strings.Contains(svg.String(), "official") || !strings.HasSuffix(svg.String(), "</svg>\n") {
		t.Fatalf("render: %v\n%s", err, svg.String())
	}
}
