package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/objup/objup/cmd/objup/tree"
)

// progress follows a tree upload's events and shows them: a progress bar
// of bytes on a terminal, else a line every interval.
type progress struct {
	w        io.Writer
	interval time.Duration
	start    time.Time

	mu        sync.Mutex
	bar       *progressbar.ProgressBar // nil: plain lines
	files     int
	total     int64
	finished  int   // files done, skipped or failed
	uploaded  int   // files stored by this run
	failed    int   // files failed
	bytes     int64 // bytes done: stored, skipped, or held by the service
	inFlight  map[string]int64
	stop      chan struct{}
	stoppedWg sync.WaitGroup
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// newProgress shows progress on w: a bar if bar is set, else a line every
// interval (none if interval is 0).
func newProgress(w io.Writer, bar bool, interval time.Duration) *progress {
	p := &progress{w: w, interval: interval, start: time.Now(), inFlight: make(map[string]int64), stop: make(chan struct{})}
	if bar {
		p.bar = progressbar.NewOptions64(-1,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription("uploading"),
			progressbar.OptionSetWidth(30),
			progressbar.OptionShowBytes(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionSetRenderBlankState(true),
		)
		return p
	}
	if interval > 0 {
		p.stoppedWg.Go(func() {
			t := time.NewTicker(interval)
			defer t.Stop()
			for {
				select {
				case <-p.stop:
					return
				case <-t.C:
					p.line()
				}
			}
		})
	}
	return p
}

// event takes one event of the upload. Events come one at a time.
func (p *progress) event(e tree.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch e.Kind {
	case tree.Walked:
		p.files, p.total = e.Files, e.Size
		if p.bar != nil {
			p.bar.ChangeMax64(e.Size)
		}
		return
	case tree.Progressed:
		p.add(e.Bytes - p.inFlight[e.Path])
		p.inFlight[e.Path] = e.Bytes
		return
	case tree.Started:
		if e.Err != nil {
			fmt.Fprintf(p.w, "objup: %s: the earlier upload could not be continued (%v): sending it anew\n", e.Path, e.Err)
		}
		return
	case tree.Done:
		if !e.Found {
			p.uploaded++
		}
	case tree.Failed:
		p.failed++
	case tree.Skipped:
		if e.Reason == tree.SkipSymlink || e.Reason == tree.SkipCycle {
			if p.bar == nil || e.Err != nil {
				fmt.Fprintf(p.w, "objup: skipping %s (%s)\n", e.Path, describeSkip(e))
			}
			return
		}
	}
	p.finished++
	if e.Kind != tree.Failed {
		p.add(e.Size - p.inFlight[e.Path])
	} else {
		p.add(-p.inFlight[e.Path])
	}
	delete(p.inFlight, e.Path)
}

// describeSkip says why a link was left out.
func describeSkip(e tree.Event) string {
	switch {
	case e.Err != nil:
		return "a link that points nowhere: " + e.Err.Error()
	case e.Reason == tree.SkipCycle:
		return "a link to a directory that contains it"
	}
	return "a symbolic link; --follow-symlinks uploads what it points to"
}

// add counts n more bytes done. p.mu is held.
func (p *progress) add(n int64) {
	p.bytes += n
	if p.bar != nil && n != 0 {
		_ = p.bar.Add64(n)
	}
}

// line writes one line of progress.
func (p *progress) line() {
	p.mu.Lock()
	defer p.mu.Unlock()
	el := time.Since(p.start)
	fmt.Fprintf(p.w, "objup: %d/%d files, %s/%s, %.1f objects/s, %d failed, %s\n",
		p.finished, p.files, formatBytes(p.bytes), formatBytes(p.total),
		float64(p.uploaded)/el.Seconds(), p.failed, el.Round(time.Second))
}

// close stops the periodic lines and clears the bar.
func (p *progress) close() {
	close(p.stop)
	p.stoppedWg.Wait()
	if p.bar != nil {
		_ = p.bar.Finish()
		_ = p.bar.Clear()
	}
}
