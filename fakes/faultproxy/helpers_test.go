package faultproxy_test

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/objup/objup/fakes/faultproxy"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// timeout bounds every read, write and wait of a test.
const timeout = 10 * time.Second

// leakCheck fails t if it leaves a goroutine behind. Call it first, so
// that its check runs after every other cleanup.
func leakCheck(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// newTarget returns a listener standing for the server behind a proxy;
// the test accepts its connections itself (see dial).
func newTarget(t *testing.T) *net.TCPListener {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// newProxy returns a proxy in front of target, closed when t ends.
func newProxy(t *testing.T, target string, opts ...faultproxy.Option) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(target, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// dial opens a connection through p to the target ln and returns its two
// ends: the client's socket and the server's (accepted from ln).
func dial(t *testing.T, p *faultproxy.Proxy, ln *net.TCPListener) (client, server *net.TCPConn) {
	t.Helper()
	addr, err := net.ResolveTCPAddr("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	client, err = net.DialTCP("tcp", nil, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	ln.SetDeadline(time.Now().Add(timeout))
	server, err = ln.AcceptTCP()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	client.SetDeadline(time.Now().Add(timeout))
	server.SetDeadline(time.Now().Add(timeout))
	return client, server
}

// readResult is what readAll returns.
type readResult struct {
	data []byte
	err  error // io.EOF after a clean close
	at   time.Time
}

// readAll reads c until an error (io.EOF included).
func readAll(c net.Conn) readResult {
	var data []byte
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		data = append(data, buf[:n]...)
		if err != nil {
			return readResult{data, err, time.Now()}
		}
	}
}

// readAsync runs readAll on c in a goroutine; receive its result before
// the test ends.
func readAsync(c net.Conn) <-chan readResult {
	ch := make(chan readResult, 1)
	go func() { ch <- readAll(c) }()
	return ch
}

// isReset reports whether err is a connection reset.
func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }

// checkEnd fails t unless err is what ends a connection as want says:
// "eof" or "reset".
func checkEnd(t *testing.T, who string, err error, want string) {
	t.Helper()
	switch want {
	case "eof":
		if err != io.EOF {
			t.Errorf("%s: read ended with %v, want io.EOF", who, err)
		}
	case "reset":
		if !isReset(err) {
			t.Errorf("%s: read ended with %v, want a connection reset", who, err)
		}
	default:
		panic("checkEnd: want " + want)
	}
}

// random returns n pseudo-random bytes.
func random(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)})
	r.Read(b)
	return b
}

// waitStats waits until cond holds for p's stats; the proxy offers no
// event to wait on for these, so it polls.
func waitStats(t *testing.T, p *faultproxy.Proxy, cond func(faultproxy.Stats) bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond(p.Stats()) {
		if time.Now().After(deadline) {
			t.Fatalf("stats never met the condition: %+v", p.Stats())
		}
		time.Sleep(time.Millisecond)
	}
}

// sink is a target server that reads and discards what each connection
// sends, and closes it once the client has closed its side.
type sink struct {
	ln *net.TCPListener
	wg sync.WaitGroup
	mu sync.Mutex
	cs []net.Conn
}

// newSink starts a sink, stopped when t ends.
func newSink(t *testing.T) *sink {
	s := &sink{ln: newTarget(t)}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := s.ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.cs = append(s.cs, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				c.SetDeadline(time.Now().Add(timeout))
				io.Copy(io.Discard, c)
				c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		s.ln.Close()
		s.mu.Lock()
		for _, c := range s.cs {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}
