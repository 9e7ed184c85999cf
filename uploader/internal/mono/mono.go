package mono

import "time"

// Time is a point in time as the monotonic time since the process started.
// Now never returns 0, so the zero Time means "not set".
type Time time.Duration

// epoch is the process's start, as this package sees it.
var epoch = time.Now()

// Now returns the current time; never 0.
func Now() Time { return Time(time.Since(epoch)) + 1 }

// Since returns the time from u to t.
func (t Time) Since(u Time) time.Duration { return time.Duration(t - u) }

// Add returns t plus d.
func (t Time) Add(d time.Duration) Time { return t + Time(d) }

// Wall returns t as a time.Time (with a monotonic reading).
func (t Time) Wall() time.Time { return epoch.Add(time.Duration(t)) }
