package integration

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no goroutine outlives the tests. The official client
// is closed by each test and the fake servers stop theirs; what remains is
// known and process-wide.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Started by an init function of go.opencensus.io, linked in by
		// cloud.google.com/go/storage; it lives as long as the process.
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
	)
}
