// Package frontend puts a real L7 front end, HAProxy, between a test's
// client and a server: as Google's front ends do before GCS, it
// terminates the client's connection (HTTP/2 for gRPC, or HTTP/1.1),
// reads each request and forwards it on a connection of its own to the
// server. A client's TCP reset then ends only the client's connection:
// what HAProxy has read is still forwarded. Tests put it between a fault
// proxy (fakes/faultproxy) and the fake GCS (package fakes), so that the
// faults hit the client's side of the front end, as on the real path.
//
// [Start] runs Debian's haproxy (2.6; .ci/haproxy.sh installs it) as a
// child process listening on 127.0.0.1, and [Frontend.Close] stops it.
// Where the binary is missing, Start returns an error for which
// [IsMissing] is true, which a test turns into a skip ([StartTest] does).
//
// In [GRPC] mode HAProxy speaks HTTP/2 without TLS on both sides (proto
// h2 on its listener and on its server line), as gRPC needs; in [HTTP1]
// mode, HTTP/1.1 on both sides, for the JSON API port. Either way it is
// an HTTP proxy (mode http): it parses each request and response, keeps
// its own connections to the target, and passes trailers, so gRPC
// statuses arrive. Its timeouts are long (10 minutes of inactivity), so
// that only the faults a test injects end a stream. Like Google's front
// ends, it caps the concurrent streams of one client connection at 100
// (HAProxy's default). A request it has read whole is forwarded even if
// its client then resets (option abortonclose is off, HAProxy's default):
// TestChain stores a JSON upload whose client reset behind a fault proxy
// that delivered what it held.
package frontend

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Mode is the protocol HAProxy speaks on both sides.
type Mode int

const (
	// GRPC is HTTP/2 over cleartext TCP (prior knowledge) on both sides:
	// for a gRPC port.
	GRPC Mode = iota
	// HTTP1 is HTTP/1.1 on both sides: for the JSON API port.
	HTTP1
)

// String returns "grpc" or "http1".
func (m Mode) String() string {
	switch m {
	case GRPC:
		return "grpc"
	case HTTP1:
		return "http1"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Option configures [Start].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	binary string
}

// WithBinary runs the haproxy binary at path, in place of the one found
// in PATH (or /usr/sbin/haproxy, where Debian installs it).
func WithBinary(path string) Option {
	return optionFunc(func(c *config) { c.binary = path })
}

// Frontend is a running HAProxy. Its methods are safe for concurrent use.
type Frontend struct {
	addr   string
	cmd    *exec.Cmd
	dir    string
	stderr *boundedBuffer
	exited chan struct{} // closed when the process has exited
	once   sync.Once
	err    error
}

// errMissing marks the error of a Start that found no haproxy binary.
var errMissing = errors.New("frontend: haproxy is not installed (run .ci/haproxy.sh as root to install Debian's package)")

// IsMissing reports whether err is Start's error for a missing haproxy
// binary.
func IsMissing(err error) bool { return errors.Is(err, errMissing) }

// Start runs HAProxy on 127.0.0.1, on a port of the system's choosing,
// in front of target (a host:port) in mode m, and returns it once its
// configuration was checked and its listener is open: connections made
// from then on are served. The caller must Close it. If the haproxy
// binary is missing, the error satisfies IsMissing; any other error (a
// configuration HAProxy refuses, a process that exits at once) says what
// HAProxy printed. It panics if m is not GRPC or HTTP1.
func Start(target string, m Mode, opts ...Option) (*Frontend, error) {
	if m != GRPC && m != HTTP1 {
		panic(fmt.Sprintf("frontend: invalid mode %d", int(m)))
	}
	var cfg config
	for _, o := range opts {
		o.apply(&cfg)
	}
	bin, err := binary(cfg.binary)
	if err != nil {
		return nil, err
	}
	if _, _, err := net.SplitHostPort(target); err != nil {
		return nil, fmt.Errorf("frontend: target %q: %w", target, err)
	}
	dir, err := os.MkdirTemp("", "objup-haproxy-")
	if err != nil {
		return nil, fmt.Errorf("frontend: %w", err)
	}
	f, err := start(bin, dir, target, m)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return f, nil
}

// binary returns the haproxy binary to run: path if set, else the one in
// PATH or in /usr/sbin.
func binary(path string) (string, error) {
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("%w: %v", errMissing, err)
		}
		return path, nil
	}
	if p, err := exec.LookPath("haproxy"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/haproxy"); err == nil {
		return "/usr/sbin/haproxy", nil
	}
	return "", errMissing
}

// haproxyConfig returns HAProxy's configuration: a listener on the inherited
// socket (fd 3) and one server, target, both speaking m.
func haproxyConfig(target string, m Mode) string {
	proto := ""
	if m == GRPC {
		proto = " proto h2"
	}
	return fmt.Sprintf(`global
	maxconn 4096

defaults
	mode http
	timeout connect 5s
	timeout client 10m
	timeout server 10m
	timeout http-keep-alive 10m

frontend objup
	bind fd@3%[2]s
	default_backend target

backend target
	server target %[1]s%[2]s
`, target, proto)
}

// start writes the configuration to dir, checks it, and runs HAProxy on a
// listener the process inherits, so that there is no window in which its
// port is free.
func start(bin, dir, target string, m Mode) (*Frontend, error) {
	cfgPath := dir + "/haproxy.cfg"
	if err := os.WriteFile(cfgPath, []byte(haproxyConfig(target, m)), 0o600); err != nil {
		return nil, fmt.Errorf("frontend: %w", err)
	}
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, fmt.Errorf("frontend: listen: %w", err)
	}
	defer ln.Close() // the child holds its own copy
	lf, err := ln.File()
	if err != nil {
		return nil, fmt.Errorf("frontend: %w", err)
	}
	defer lf.Close()

	// -c checks the configuration, with the listener it will have.
	check := exec.Command(bin, "-c", "-q", "-f", cfgPath)
	check.ExtraFiles = []*os.File{lf}
	if out, err := check.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("frontend: haproxy refused its configuration: %v: %s", err, bytes.TrimSpace(out))
	}

	f := &Frontend{addr: ln.Addr().String(), dir: dir, stderr: &boundedBuffer{max: 64 << 10}, exited: make(chan struct{})}
	// -db: stay in the foreground; -W is not used: one process.
	f.cmd = exec.Command(bin, "-db", "-f", cfgPath)
	f.cmd.ExtraFiles = []*os.File{lf}
	f.cmd.Stdout, f.cmd.Stderr = f.stderr, f.stderr
	dieWithParent(f.cmd)
	if err := f.cmd.Start(); err != nil {
		return nil, fmt.Errorf("frontend: start haproxy: %w", err)
	}
	go func() {
		f.err = f.cmd.Wait()
		close(f.exited)
	}()
	return f, nil
}

// Addr returns the host:port to dial in place of the target.
func (f *Frontend) Addr() string { return f.addr }

// Close stops HAProxy (SIGTERM, then SIGKILL after 5 seconds), waits for
// it to exit and removes its files. It returns an error if HAProxy had
// exited before Close, with what it printed. Close is idempotent.
func (f *Frontend) Close() error {
	var err error
	f.once.Do(func() {
		select {
		case <-f.exited:
			err = fmt.Errorf("frontend: haproxy exited early: %v: %s", f.err, f.stderr.String())
		default:
			f.cmd.Process.Signal(syscall.SIGTERM)
			t := time.NewTimer(5 * time.Second)
			select {
			case <-f.exited:
				t.Stop()
			case <-t.C:
				f.cmd.Process.Kill()
				<-f.exited
			}
		}
		os.RemoveAll(f.dir)
	})
	return err
}

// Output returns what HAProxy printed so far (at most its last 64 KiB).
func (f *Frontend) Output() string { return f.stderr.String() }

// TB is the part of testing.TB that StartTest uses, so that this package
// does not link the testing package.
type TB interface {
	Helper()
	Skip(args ...any)
	Fatal(args ...any)
	Cleanup(func())
}

// StartTest starts a front end for a test, as Start does, and returns
// its address; it stops it when the test ends. It skips the test, saying
// why, if the haproxy binary is missing, and fails it on any other error.
func StartTest(tb TB, target string, m Mode, opts ...Option) string {
	tb.Helper()
	f, err := Start(target, m, opts...)
	if IsMissing(err) {
		tb.Skip("skipping: no HAProxy front end: " + err.Error())
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := f.Close(); err != nil {
			tb.Fatal(err)
		}
	})
	return f.Addr()
}

// boundedBuffer keeps the last max bytes written to it.
type boundedBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b = append(b.b, p...)
	if over := len(b.b) - b.max; over > 0 {
		b.b = append(b.b[:0], b.b[over:]...)
	}
	return len(p), nil
}

func (b *boundedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.TrimSpace(string(b.b))
}
