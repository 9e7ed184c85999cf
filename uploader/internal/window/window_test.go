package window

import (
	"testing"
	"time"

	"github.com/objup/objup/uploader/internal/mono"
)

// step is one event of a session: an acknowledgement dt after the previous
// event (with the round window-limited or not), or a shrink.
type step struct {
	dt              time.Duration
	limited         bool
	shrink          bool
	persisted, last int64
	want            int64 // the window returned
}

func TestRounds(t *testing.T) {
	tests := []struct {
		name                string
		floor, start, limit int64
		steps               []step
		growing             bool // after the last step
	}{
		{
			name:  "grows fourfold while the rate rises, up to the cap",
			floor: 2, start: 4, limit: 64,
			steps: []step{
				{dt: time.Second, limited: true, persisted: 4, last: 20, want: 16},
				{dt: time.Second, limited: true, persisted: 20, last: 84, want: 64},
				{dt: time.Second, limited: true, persisted: 84, last: 148, want: 64},
			},
			growing: true,
		},
		{
			name:  "settles at the best round's window after two rounds without a rise",
			floor: 2, start: 4, limit: 1024,
			steps: []step{
				{dt: time.Second, limited: true, persisted: 4, last: 20, want: 16},            // 4/s: the best, at window 4
				{dt: time.Second, limited: true, persisted: 20, last: 84, want: 64},           // 16/s: the best, at 16
				{dt: time.Second, limited: true, persisted: 84, last: 340, want: 256},         // 64/s: the best, at 64
				{dt: time.Second, limited: true, persisted: 340, last: 1364, want: 1024},      // 256/s: the best, at 256
				{dt: time.Second, limited: true, persisted: 600, last: 2000, want: 1024},      // the round has not ended
				{dt: 3 * time.Second, limited: true, persisted: 1364, last: 2388, want: 1024}, // 256/s: no rise
				{dt: 4 * time.Second, limited: true, persisted: 2388, last: 3412, want: 256},  // 256/s again: settles at the best
				{dt: time.Second, limited: true, persisted: 5000, last: 6000, want: 256},      // and no longer grows
			},
		},
		{
			name:  "a round that the window did not limit keeps the window",
			floor: 2, start: 4, limit: 64,
			steps: []step{
				{dt: time.Second, persisted: 4, last: 8, want: 4},
				{dt: time.Second, persisted: 8, last: 12, want: 4},
			},
			growing: true,
		},
		{
			name:  "an acknowledgement before the round's end keeps the window",
			floor: 2, start: 4, limit: 64,
			steps: []step{
				{dt: time.Second, limited: true, persisted: 3, last: 8, want: 4},
				{dt: time.Second, limited: true, persisted: 4, last: 20, want: 16},
			},
			growing: true,
		},
		{
			name:  "a shrink halves the window down to its floor and ends growth",
			floor: 2, start: 16, limit: 64,
			steps: []step{
				{shrink: true, want: 8},
				{shrink: true, want: 4},
				{shrink: true, want: 2},
				{shrink: true, want: 2},
				{dt: time.Second, limited: true, persisted: 100, last: 200, want: 2},
			},
		},
		{
			name:  "no growth when the cap is not above the start",
			floor: 2, start: 4, limit: 4,
			steps: []step{
				{dt: time.Second, limited: true, persisted: 4, last: 8, want: 4},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w Rounds
			w.Init(tt.floor, tt.start, tt.limit)
			w.Begin(tt.start)
			at, window := w.start, tt.start
			for i, s := range tt.steps {
				if s.shrink {
					window = w.Shrink(window)
				} else {
					at = at.Add(s.dt)
					if s.limited {
						w.Limited()
					}
					window = w.ackedAt(at, s.persisted, s.last, window)
				}
				if window != s.want {
					t.Fatalf("step %d: window %d, want %d", i, window, s.want)
				}
			}
			if w.growing != tt.growing {
				t.Fatalf("growing = %v, want %v", w.growing, tt.growing)
			}
		})
	}
}

// TestAckedReadsTheClock checks Acked against the clock: a round that the
// window limited grows the window once it is acknowledged.
func TestAckedReadsTheClock(t *testing.T) {
	var w Rounds
	w.Init(2, 4, 64)
	w.Begin(4)
	w.Limited()
	w.start -= mono.Time(time.Second) // the round started a second ago
	if got := w.Acked(4, 20, 4); got != 16 {
		t.Fatalf("window %d, want 16", got)
	}
}
