// Package cmdtest runs the run function of a command of fakes/cmd
// (fakegcs, gcssink) in that command's tests: in a goroutine of its own,
// its standard output read as it comes, stopped as a signal stops the
// command, and its usage errors checked from a table.
package cmdtest

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// Run is a command's run function: it serves until ctx ends and returns
// the command's exit status.
type Run func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// Proc is one run of a Run in a goroutine of its own.
type Proc struct {
	// Stdout is what the run writes to its standard output, as it
	// writes it; it ends when the run returns.
	Stdout io.Reader
	stderr bytes.Buffer // written by the run; read once it returned
	cancel context.CancelFunc
	done   chan int
}

// Start runs run with args. The run is stopped when the test ends, if
// Stop did not stop it before.
func Start(t testing.TB, run Run, args ...string) *Proc {
	t.Helper()
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proc{Stdout: pr, cancel: cancel, done: make(chan int, 1)}
	go func() {
		p.done <- run(ctx, args, pw, &p.stderr)
		pw.Close()
	}()
	t.Cleanup(cancel)
	return p
}

// Stop ends the run, as the command's signals do, and returns its exit
// status and what it wrote to its standard error. It fails t if the run
// does not return within 30 s: a run that outlives its context is a bug.
func (p *Proc) Stop(t testing.TB) (code int, stderr string) {
	t.Helper()
	p.cancel()
	select {
	case code = <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
	return code, p.stderr.String()
}

// StopOK is Stop that fails t unless the exit status is 0; it returns the
// standard error.
func (p *Proc) StopOK(t testing.TB) string {
	t.Helper()
	code, stderr := p.Stop(t)
	if code != 0 {
		t.Fatalf("exit status %d, stderr %q", code, stderr)
	}
	return stderr
}

// UsageError is a command line that run refuses before serving: its exit
// status and a part of what it writes to its standard error.
type UsageError struct {
	Args []string
	Code int
	Want string
}

// CheckUsage runs run with each case's arguments and fails t unless it
// returns the case's status at once, with Want in its standard error and
// nothing on its standard output.
func CheckUsage(t *testing.T, run Run, cases []UsageError) {
	t.Helper()
	for _, tc := range cases {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), tc.Args, &stdout, &stderr); code != tc.Code || !strings.Contains(stderr.String(), tc.Want) || stdout.Len() != 0 {
			t.Errorf("run(%q) = %d, stdout %q, stderr %q; want %d and %q", tc.Args, code, stdout.String(), stderr.String(), tc.Code, tc.Want)
		}
	}
}
