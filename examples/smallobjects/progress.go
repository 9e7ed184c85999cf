package main

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/objup/objup/uploader"
)

// Progress refresh periods.
const (
	barPeriod  = 100 * time.Millisecond
	linePeriod = 2 * time.Second
)

// progress counts results as UploadMany reports them (OnResult, from its
// workers) and shows them on w from a goroutine of its own: a bar when w is a
// terminal, a line every linePeriod otherwise, nothing when quiet. The
// workers only touch atomics.
type progress struct {
	total  int
	start  time.Time
	done   atomic.Int64
	failed atomic.Int64
	bytes  atomic.Int64
	// tenths[i] is when the results of the first (i+1) tenths of the
	// objects were all in; each slot is written once, by the worker whose
	// result completed that tenth, and read after UploadMany returned.
	tenths [10]time.Time

	stop   chan struct{}
	exited chan struct{}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// startProgress starts showing the progress of total uploads on w. Call
// finish once UploadMany has returned.
func startProgress(w io.Writer, total int, quiet bool) *progress {
	p := &progress{total: total, start: time.Now(), stop: make(chan struct{}), exited: make(chan struct{})}
	switch {
	case quiet || total == 0:
		close(p.exited)
	case isTerminal(w):
		go p.showBar(w)
	default:
		go p.showLines(w)
	}
	return p
}

// add is the OnResult callback.
func (p *progress) add(_ int, r uploader.Result) {
	if r.Err != nil {
		p.failed.Add(1)
	} else if r.Attrs != nil {
		p.bytes.Add(r.Attrs.Size)
	}
	if n := p.done.Add(1); p.total >= 10 && n*10/int64(p.total) != (n-1)*10/int64(p.total) {
		p.tenths[n*10/int64(p.total)-1] = time.Now()
	}
}

// pace returns the objects/s of each tenth of the run, in order, or nil if
// the run had fewer than 10 objects or did not finish.
func (p *progress) pace() []float64 {
	if p.total < 10 || p.done.Load() != int64(p.total) {
		return nil
	}
	out := make([]float64, 10)
	prev, prevN := p.start, 0
	for i, t := range p.tenths {
		n := (i + 1) * p.total / 10
		if d := t.Sub(prev).Seconds(); d > 0 {
			out[i] = float64(n-prevN) / d
		}
		prev, prevN = t, n
	}
	return out
}

// finish stops the display and waits for its goroutine to end.
func (p *progress) finish() {
	select {
	case <-p.exited:
	default:
		close(p.stop)
		<-p.exited
	}
}

func (p *progress) showBar(w io.Writer) {
	defer close(p.exited)
	bar := progressbar.NewOptions(p.total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("uploading"),
		progressbar.OptionSetWidth(30),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("obj"),
		progressbar.OptionThrottle(barPeriod),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetRenderBlankState(true), // starts the clock now
	)
	t := time.NewTicker(barPeriod)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			_ = bar.Set(int(p.done.Load()))
			_ = bar.Finish()
			return
		case <-t.C:
			_ = bar.Set(int(p.done.Load()))
		}
	}
}

func (p *progress) showLines(w io.Writer) {
	defer close(p.exited)
	t := time.NewTicker(linePeriod)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			done, secs := p.done.Load(), time.Since(p.start).Seconds()
			fmt.Fprintf(w, "uploading: %d/%d objects (%.0f%%), %d failed, %.0f objects/s, %.1f MB/s\n",
				done, p.total, 100*float64(done)/float64(p.total), p.failed.Load(),
				float64(done)/secs, float64(p.bytes.Load())/1e6/secs)
		}
	}
}
