package link

import (
	"sync"
	"time"
)

// deadline is a settable deadline whose channel is closed once it has
// passed. Those waiting on the channel of one setting are woken by a later
// setting only if that one has passed too; a setting in the future or none
// leaves them waiting until the new time, or for good.
type deadline struct {
	mu    sync.Mutex
	ch    chan struct{}
	timer *time.Timer
	gen   uint64 // bumped by every set, so a stale timer closes nothing
}

// done returns the channel of the current setting.
func (d *deadline) done() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ch == nil {
		d.ch = make(chan struct{})
	}
	return d.ch
}

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gen++
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	if d.ch == nil || isClosed(d.ch) {
		d.ch = make(chan struct{})
	}
	if t.IsZero() {
		return
	}
	wait := time.Until(t)
	if wait <= 0 {
		close(d.ch)
		return
	}
	gen, ch := d.gen, d.ch
	d.timer = time.AfterFunc(wait, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.gen == gen {
			close(ch)
		}
	})
}

// stop releases the timer of the current setting.
func (d *deadline) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gen++
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
