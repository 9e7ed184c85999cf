package window

import "github.com/objup/objup/uploader/internal/mono"

// Rounds is the state of one session's window across its rounds. The zero
// Rounds never grows the window; Init sets its bounds. It is not safe for
// concurrent use: its owner calls it under the session's lock.
type Rounds struct {
	min, max int64
	growing  bool
	limited  bool      // the window held the Writer back in this round
	start    mono.Time // when the round started; 0 before the session's stream opened
	from     int64     // persisted at the round's start
	end      int64     // pushed at the round's start: the round ends when it is persisted
	window   int64     // the window of the round
	best     float64   // bytes per second, the best round's
	bestWin  int64     // the window of the best round
	flat     int       // window-limited rounds in a row without a rise
}

// Init sets the window's floor and cap; start is the window the session
// starts with, and the window grows only if max is above it.
func (w *Rounds) Init(floor, start, max int64) {
	w.min, w.max, w.growing = floor, max, max > start
}

// Begin starts the first round as the session's stream opens: it ends
// once the first window is persisted, a round trip after it went out, so
// the window may grow then rather than a round trip later.
func (w *Rounds) Begin(window int64) {
	w.start, w.end, w.window = mono.Now(), window, window
}

// Limited records that the window held the Writer back in this round.
func (w *Rounds) Limited() { w.limited = true }

// Acked takes in a new persisted size, with last the end of the data
// pushed so far and window the current window, and returns the window.
func (w *Rounds) Acked(persisted, last, window int64) int64 {
	if !w.growing || persisted < w.end {
		return window
	}
	return w.ackedAt(mono.Now(), persisted, last, window)
}

// ackedAt is Acked at time t. Acked checks whether a round ended before
// it reads the clock.
func (w *Rounds) ackedAt(t mono.Time, persisted, last, window int64) int64 {
	if !w.growing || persisted < w.end {
		return window
	}
	if d := t.Since(w.start); w.start != 0 && w.limited && d > 0 {
		rate := float64(persisted-w.from) / d.Seconds()
		if rate >= w.best*1.25 {
			w.best, w.bestWin, w.flat = rate, w.window, 0
		} else if w.flat++; w.flat >= 2 {
			w.growing = false
			return max(w.bestWin, w.min)
		}
		window = min(4*window, w.max)
	}
	w.start, w.from, w.end, w.limited, w.window = t, persisted, last, false, window
	return window
}

// Shrink returns the window halved, not below its floor, and stops its
// growth.
func (w *Rounds) Shrink(window int64) int64 {
	w.growing = false
	return max(window/2, w.min)
}
