package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/fakes/link"
)

// TestKill kills `objup cp -r` with SIGKILL at random moments, runs it
// again until a run exits 0 by itself, and checks what is stored: every
// file exactly once (one generation of each name, its size and CRC32C),
// no temporary object of a parallel upload, no journal entry, and a last
// run that sends nothing. Every third stop is a SIGINT instead, after
// which objup exits at once with status 130. The "fakegcs" case runs the
// fake as a process with its store on disk (fakegcs -data) and kills it
// too, in every fourth round, before it starts it again on the same
// store. OBJUP_KILL_SEED replays a seed.
func TestKill(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a child process in rounds")
	}
	t.Run("grpc", func(t *testing.T) { killRounds(t, newKillEnv(t), false, nil) })
	t.Run("http", func(t *testing.T) { killRounds(t, newKillEnv(t), true, nil) })
	t.Run("fakegcs", func(t *testing.T) {
		f := startFakegcs(t, t.TempDir())
		killRounds(t, f.env, false, f)
	})
}

// newKillEnv is the fake of TestKill: a slow link, so that a run lasts
// about a second and a kill lands in the middle of it.
func newKillEnv(t *testing.T) *env {
	return newEnv(t, fakes.WithLink(link.Config{Bandwidth: 4 << 20, RTT: 2 * time.Millisecond}))
}

// killRounds is TestKill on e, over the JSON API if http; f, if not nil,
// is the fake's process, killed and started again in some rounds.
func killRounds(t *testing.T, e *env, http bool, f *fakegcs) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("OBJUP_KILL_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (OBJUP_KILL_SEED replays it)", seed)
	rng := rand.New(rand.NewPCG(seed, 3))

	files := make(map[string]int)
	for i := range 300 {
		files[fmt.Sprintf("d%d/f%03d.dat", i%7, i)] = 1 + rng.IntN(16<<10)
	}
	files["big/resumable.bin"] = 8<<20 - 4096 // under the threshold: a resumable session
	files["big/parallel.bin"] = 8 << 20       // a parallel composite upload of 1 MiB parts
	dir := mkTree(t, files)
	args := []string{"cp", "-r", dir, "gs://" + bucket + "/kill",
		"--parallel-threshold", "8MiB", "--part-size", "1MiB", "--concurrency", "16", "--progress-every", "0"}
	if http {
		args = append(args, "--http")
	}

	const (
		maxRounds   = 60
		killRounds  = 25 // after these, runs go to their end
		maxDuration = 3 * time.Minute
	)
	start := time.Now()
	kills, interrupts, fakeKills, restarts, ok := 0, 0, 0, 0, false
	var last result
	for round := 1; round <= maxRounds && time.Since(start) < maxDuration; round++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := e.command(ctx, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			cancel()
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		var kill <-chan time.Time
		if round <= killRounds {
			kill = time.After(time.Duration(20+rng.IntN(700)) * time.Millisecond)
		}
		select {
		case err := <-exited:
			last = result{stdout: stdout.String(), stderr: stderr.String()}
			if err != nil {
				last.code = cmd.ProcessState.ExitCode()
				t.Logf("round %d: exit %d\n%s%s", round, last.code, last.stdout, last.stderr)
			}
		case <-kill:
			if (kills+interrupts)%3 == 2 {
				_ = cmd.Process.Signal(syscall.SIGINT)
				<-exited
				// -1: the signal came before the runtime's handler was in
				// place, and killed the process as SIGKILL would.
				if code := cmd.ProcessState.ExitCode(); code != exitInterrupted && code != 0 && code != -1 {
					t.Errorf("round %d: exit %d after SIGINT, want %d\n%s%s", round, code, exitInterrupted, stdout.String(), stderr.String())
				}
				interrupts++
			} else {
				_ = cmd.Process.Signal(syscall.SIGKILL)
				<-exited
				kills++
			}
			cancel()
			restarts += strings.Count(stderr.String(), "could not be continued")
			if f != nil && round%4 == 0 {
				f.restart(t)
				fakeKills++
			}
			continue
		}
		cancel()
		restarts += strings.Count(stderr.String(), "could not be continued")
		if last.code == 0 {
			ok = true
			t.Logf("round %d finished after %d kills, %d interrupts and %d kills of the fake in %s (%d uploads the service refused to continue were sent anew): %s",
				round, kills, interrupts, fakeKills, time.Since(start).Round(time.Millisecond), restarts, strings.TrimSpace(last.stdout))
			break
		}
	}
	if !ok {
		t.Fatalf("no run finished in %s; the last said:\n%s%s", time.Since(start), last.stdout, last.stderr)
	}

	e.settle(t)
	rels := keys(files)
	e.checkStored(t, dir, "kill/", rels)
	if vs := e.versions(t, "kill/"); len(vs) != len(files) {
		t.Errorf("%d names under kill/, want %d", len(vs), len(files))
	}
	if tmp := e.live(t, "objup-tmp/"); len(tmp) != 0 {
		t.Errorf("temporary objects left: %q", tmp)
	}
	entries, _ := filepath.Glob(filepath.Join(e.journal, "*.objup.json"))
	if len(entries) != 0 {
		t.Errorf("journal entries left: %q", entries)
	}

	// A run after the end sends nothing. Its calls carry a tenant of
	// their own, to tell them from calls of killed runs that the fake may
	// still be reading.
	r := e.run(t, append(args, "--tenant", "last")...)
	if r.code != 0 || !regexp.MustCompile(`\b0 uploaded`).MatchString(r.stdout) {
		t.Errorf("a run after the end: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if n := e.writes(t, "last"); n != 0 {
		t.Errorf("a run after the end made %d write calls", n)
	}
	// And what the killed runs' late calls did changed nothing.
	e.settle(t)
	e.checkStored(t, dir, "kill/", rels)
	if tmp := e.live(t, "objup-tmp/"); len(tmp) != 0 {
		t.Errorf("temporary objects left at the end: %q", tmp)
	}
}

// settle waits until the fake has ended the calls of the killed
// processes, which it may still be reading when the last run ends: until
// its count of calls stays the same for a second (15 s at most): a
// killed client's socket may still hold megabytes that the fake reads at
// the link's rate.
func (e *env) settle(t *testing.T) {
	t.Helper()
	total := func() int64 { return e.calls(t) }
	last, since := total(), time.Now()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if n := total(); n != last {
			last, since = n, time.Now()
		} else if time.Since(since) >= time.Second {
			return
		}
	}
	t.Logf("the fake's calls did not settle in 15 s")
}

// TestKillThenDelete kills objup while its large files upload, deletes
// them, and runs it again: the uploads the journal names are abandoned
// (no temporary object, no journal entry left), and the run exits 0.
func TestKillThenDelete(t *testing.T) {
	e := newEnv(t, fakes.WithLink(link.Config{Bandwidth: 2 << 20, RTT: 2 * time.Millisecond}))
	dir := mkTree(t, map[string]int{"keep.txt": 100, "big/par.bin": 8 << 20, "big/res.bin": 3 << 20})
	args := []string{"cp", "-r", dir, "gs://" + bucket + "/del",
		"--parallel-threshold", "4MiB", "--part-size", "1MiB", "--progress-every", "0"}
	entries := func() []string {
		m, _ := filepath.Glob(filepath.Join(e.journal, "*.objup.json"))
		return m
	}
	for try := 0; try < 10 && len(entries()) < 2; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := e.command(ctx, args...)
		if err := cmd.Start(); err != nil {
			cancel()
			t.Fatal(err)
		}
		for deadline := time.Now().Add(5 * time.Second); len(entries()) < 2 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		cancel()
	}
	if n := len(entries()); n < 2 {
		t.Fatalf("%d journal entries after the kills, want 2", n)
	}
	if err := os.RemoveAll(filepath.Join(dir, "big")); err != nil {
		t.Fatal(err)
	}
	r := e.run(t, args...)
	if r.code != 0 || !strings.Contains(r.stdout, "1 files") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	e.settle(t)
	if n := entries(); len(n) != 0 {
		t.Errorf("journal entries left: %q", n)
	}
	if tmp := e.live(t, "objup-tmp/"); len(tmp) != 0 {
		t.Errorf("temporary objects left: %q", tmp)
	}
	e.checkStored(t, dir, "del/", []string{"keep.txt"})
}

// fakegcs is the fake as a process (fakes/cmd/fakegcs) with its store on
// disk, built once.
type fakegcs struct {
	*env
	data string
	cmd  *exec.Cmd
}

var (
	fakegcsOnce sync.Once
	fakegcsBin  string
	fakegcsErr  error
)

// startFakegcs builds fakegcs (once) and starts it on the store in data,
// with the test's bucket; the test's cleanup kills it.
func startFakegcs(t *testing.T, data string) *fakegcs {
	t.Helper()
	fakegcsOnce.Do(func() {
		fakegcsBin = filepath.Join(filepath.Dir(objupBin), "fakegcs")
		out, err := exec.Command("go", "build", "-o", fakegcsBin, "github.com/objup/objup/fakes/cmd/fakegcs").CombinedOutput()
		if err != nil {
			fakegcsErr = fmt.Errorf("building fakegcs: %v\n%s", err, out)
		}
	})
	if fakegcsErr != nil {
		t.Fatal(fakegcsErr)
	}
	f := &fakegcs{env: &env{journal: t.TempDir()}, data: data}
	f.start(t)
	t.Cleanup(func() {
		_ = f.cmd.Process.Kill()
		_ = f.cmd.Wait()
	})
	createBucket(t, f.httpURL)
	return f
}

// start starts the process and reads its addresses.
func (f *fakegcs) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(fakegcsBin, "-data", f.data, "-bandwidth", "4MB/s", "-rtt", "2ms")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		var got []string
		for len(got) < 2 && sc.Scan() {
			got = append(got, sc.Text())
		}
		lines <- got
		for sc.Scan() {
		}
	}()
	select {
	case got := <-lines:
		if len(got) != 2 {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("fakegcs printed %q\n%s", got, stderr.String())
		}
		f.grpcAddr = strings.TrimPrefix(got[0], "grpc ")
		f.httpURL = strings.TrimPrefix(got[1], "http ")
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("fakegcs did not start in 30 s\n%s", stderr.String())
	}
	f.cmd = cmd
}

// restart kills the process with SIGKILL and starts it again on its
// store.
func (f *fakegcs) restart(t *testing.T) {
	t.Helper()
	_ = f.cmd.Process.Signal(syscall.SIGKILL)
	_ = f.cmd.Wait()
	f.start(t)
}
