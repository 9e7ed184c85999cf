//go:build race

package pool_test

// raceEnabled reports whether the race detector is on: it makes sync.Pool drop
// buffers at random, so allocation counts are meaningless then.
const raceEnabled = true
