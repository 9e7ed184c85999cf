// Command benchchart turns the output of the distance benchmarks into an SVG
// chart: one panel per benchmark and size, throughput against round-trip
// time, one line per client.
//
// It reads `go test -bench` output (a file, or standard input) and takes
// the benchmarks whose names carry an rtt= and a client= element, such as
//
//	BenchmarkDistance/size=64MiB/rtt=20ms/client=objup-2  10  ...  283.1 MB/s ...
//
// The panel is the name without those two elements; the y value is the
// line's MB/s, or its objects/s when it has none; repeated runs (-count) are
// reduced to their median.
//
// Usage:
//
//	go run ./integration/benchchart -o docs/distance.svg integration/testdata/distance.txt
package main

import (
	"bufio"
	"cmp"
	"flag"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	out := flag.String("o", "", "write the SVG to this file (default standard output)")
	title := flag.String("title", "Upload throughput against round-trip time", "the chart's title")
	flag.Parse()
	var in io.Reader = os.Stdin
	if flag.NArg() > 1 {
		fmt.Fprintln(os.Stderr, "usage: benchchart [-o out.svg] [-title T] [bench.txt]")
		os.Exit(2)
	}
	if flag.NArg() == 1 {
		f, err := os.Open(flag.Arg(0))
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchchart:", err)
			os.Exit(1)
		}
		defer f.Close()
		in = f
	}
	panels, err := parse(in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchchart:", err)
		os.Exit(1)
	}
	if len(panels) == 0 {
		fmt.Fprintln(os.Stderr, "benchchart: no benchmark with rtt= and client= in its name")
		os.Exit(1)
	}
	var w io.Writer = os.Stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchchart:", err)
			os.Exit(1)
		}
		defer f.Close()
		w = f
	}
	if err := render(w, *title, panels); err != nil {
		fmt.Fprintln(os.Stderr, "benchchart:", err)
		os.Exit(1)
	}
}

// panel is one chart: a benchmark and size, its unit, and its series.
type panel struct {
	name   string
	unit   string
	series map[string]map[time.Duration][]float64 // client -> rtt -> values
}

// point is one reduced value of a series.
type point struct {
	rtt time.Duration
	v   float64
}

// parse reads benchmark lines into panels, in the order they first appear.
func parse(r io.Reader) ([]*panel, error) {
	var panels []*panel
	byName := map[string]*panel{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name, rtt, client, ok := split(f[0])
		if !ok {
			continue
		}
		v, unit, ok := value(f[2:])
		if !ok {
			continue
		}
		p := byName[name]
		if p == nil {
			p = &panel{name: name, unit: unit, series: map[string]map[time.Duration][]float64{}}
			byName[name] = p
			panels = append(panels, p)
		}
		if p.series[client] == nil {
			p.series[client] = map[time.Duration][]float64{}
		}
		p.series[client][rtt] = append(p.series[client][rtt], v)
	}
	return panels, sc.Err()
}

// split takes the rtt= and client= elements out of a benchmark's name; the
// rest, without the GOMAXPROCS suffix, names the panel.
func split(full string) (name string, rtt time.Duration, client string, ok bool) {
	full = strings.TrimPrefix(full, "Benchmark")
	if i := strings.LastIndexByte(full, '-'); i > 0 {
		if _, err := strconv.Atoi(full[i+1:]); err == nil {
			full = full[:i]
		}
	}
	var keep []string
	hasRTT := false
	for _, e := range strings.Split(full, "/") {
		switch {
		case strings.HasPrefix(e, "rtt="):
			d, err := time.ParseDuration(strings.TrimPrefix(e, "rtt="))
			if err != nil {
				return "", 0, "", false
			}
			rtt, hasRTT = d, true
		case strings.HasPrefix(e, "client="):
			client = strings.TrimPrefix(e, "client=")
		default:
			keep = append(keep, e)
		}
	}
	return strings.Join(keep, "/"), rtt, client, hasRTT && client != ""
}

// value returns a line's MB/s, or else its objects/s.
func value(f []string) (float64, string, bool) {
	var objects float64
	hasObjects := false
	for i := 1; i < len(f); i++ {
		v, err := strconv.ParseFloat(f[i-1], 64)
		if err != nil {
			continue
		}
		switch f[i] {
		case "MB/s":
			return v, "MB/s", true
		case "objects/s":
			objects, hasObjects = v, true
		}
	}
	return objects, "objects/s", hasObjects
}

// median reduces repeated runs.
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// points returns a series' reduced values in RTT order.
func points(s map[time.Duration][]float64) []point {
	var ps []point
	for rtt, v := range s {
		ps = append(ps, point{rtt, median(v)})
	}
	slices.SortFunc(ps, func(a, b point) int { return cmp.Compare(a.rtt, b.rtt) })
	return ps
}

// Layout of the SVG, in pixels.
const (
	panelW, panelH = 460, 300
	marginL        = 64
	marginR        = 130
	marginT        = 34
	marginB        = 44
	columns        = 2
)

// palette colours the clients, in their sorted order (objup first).
var palette = []string{"#1a73e8", "#d93025", "#f29900", "#188038", "#9334e6", "#5f6368"}

// render writes the panels as one SVG.
func render(w io.Writer, title string, panels []*panel) error {
	rows := (len(panels) + columns - 1) / columns
	width := columns * panelW
	height := rows*panelH + 40
	b := &strings.Builder{}
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(b, `<text x="%d" y="24" font-size="16" text-anchor="middle">%s</text>`+"\n", width/2, html.EscapeString(title))
	for i, p := range panels {
		x0, y0 := (i%columns)*panelW, 40+(i/columns)*panelH
		drawPanel(b, p, x0, y0)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// drawPanel draws one panel with its top left corner at x0, y0.
func drawPanel(b *strings.Builder, p *panel, x0, y0 int) {
	clients := make([]string, 0, len(p.series))
	for c := range p.series {
		clients = append(clients, c)
	}
	slices.SortFunc(clients, func(a, b string) int {
		// objup's own lines first, then the others by name.
		ao, bo := strings.HasPrefix(a, "objup"), strings.HasPrefix(b, "objup")
		if ao != bo {
			if ao {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var maxRTT time.Duration
	maxV := 0.0
	for _, c := range clients {
		for _, pt := range points(p.series[c]) {
			maxRTT = max(maxRTT, pt.rtt)
			maxV = max(maxV, pt.v)
		}
	}
	maxRTT = max(maxRTT, time.Millisecond)
	top := niceCeil(maxV)
	plotW, plotH := panelW-marginL-marginR, panelH-marginT-marginB
	px := func(d time.Duration) float64 {
		return float64(x0+marginL) + float64(d)/float64(maxRTT)*float64(plotW)
	}
	py := func(v float64) float64 { return float64(y0+marginT+plotH) - v/top*float64(plotH) }

	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="13" font-weight="bold">%s (%s)</text>`+"\n", x0+marginL, y0+20, html.EscapeString(p.name), p.unit)
	// Axes and grid.
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		y := py(v)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e0e0e0"/>`+"\n", x0+marginL, y, x0+marginL+plotW, y)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", x0+marginL-6, y, short(v))
	}
	ticks := map[time.Duration]bool{}
	for _, c := range clients {
		for rtt := range p.series[c] {
			ticks[rtt] = true
		}
	}
	for rtt := range ticks {
		x := px(rtt)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#bdbdbd"/>`+"\n", x, y0+marginT+plotH, x, y0+marginT+plotH+4)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x, y0+marginT+plotH+16, strconv.FormatInt(rtt.Milliseconds(), 10))
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">round-trip time (ms)</text>`+"\n", x0+marginL+plotW/2, y0+panelH-10)
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", x0+marginL, y0+marginT, x0+marginL, y0+marginT+plotH)
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", x0+marginL, y0+marginT+plotH, x0+marginL+plotW, y0+marginT+plotH)
	// Series and legend.
	for i, c := range clients {
		color := palette[i%len(palette)]
		var path strings.Builder
		for j, pt := range points(p.series[c]) {
			cmd := "L"
			if j == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&path, "%s%.1f %.1f ", cmd, px(pt.rtt), py(pt.v))
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(pt.rtt), py(pt.v), color)
		}
		fmt.Fprintf(b, `<path d="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.TrimSpace(path.String()), color)
		ly := y0 + marginT + 6 + i*18
		lx := x0 + marginL + plotW + 12
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", lx, ly, lx+16, ly, color)
		fmt.Fprintf(b, `<text x="%d" y="%d" dominant-baseline="middle">%s</text>`+"\n", lx+20, ly, html.EscapeString(c))
	}
}

// niceCeil rounds v up to a round multiple of a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// short formats an axis value.
func short(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case v >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
