// Package link simulates the network path between a client and a server:
// a round-trip time and a bandwidth per connection, put in front of a
// server's listener, so tests and benchmarks on loopback see a path like the
// one from a user to GCS, 1 to 100 ms away.
//
// Every connection accepted through [Listen] delays the bytes each way by
// half the RTT, pipelined like a real path (a window of bytes is in flight
// at once, not one write per round trip), and paces each direction at the
// bandwidth, like a bottleneck link: a segment departs when the previous one
// has, plus its length over the bandwidth, and arrives half the RTT later.
// The link buffers a bounded amount per direction (see Config), so a reader
// that stops reading slows the writer down, as TCP's window does; HTTP/2's
// and gRPC's flow control sit on top, as on a real path.
//
// It does not simulate loss, reordering or jitter, and the bandwidth is per
// connection, not a bottleneck shared by all of them. A front end's cap on
// the concurrent streams of one connection is the gRPC server's
// (fakes.WithMaxStreams), and so are its flow-control windows
// (ServerWindows).
package link

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
)

// Config describes the simulated path. The zero value is a perfect link:
// Listen then returns its listener unchanged.
type Config struct {
	// RTT is the round-trip time the link adds; each direction gets half.
	RTT time.Duration
	// Bandwidth is the bytes per second of each connection, in each
	// direction; 0 is unlimited.
	Bandwidth int64
}

// IsZero reports whether c is the perfect link.
func (c Config) IsZero() bool { return c.RTT <= 0 && c.Bandwidth <= 0 }

// String describes c, as the flags of the fake's commands take it.
func (c Config) String() string {
	if c.IsZero() {
		return "no delay, unlimited"
	}
	bw := "unlimited"
	if c.Bandwidth > 0 {
		bw = FormatBandwidth(c.Bandwidth)
	}
	return fmt.Sprintf("RTT %v, %s per connection", c.RTT, bw)
}

// Flow-control windows a gRPC server behind a link advertises (see
// ServerWindows).
const (
	StreamWindow = 64 << 20
	ConnWindow   = 256 << 20
)

// ServerWindows returns the gRPC server options of a front end built for
// long paths, for a server behind a link of c: HTTP/2 flow-control windows
// of StreamWindow per stream and ConnWindow per connection from the start,
// so a client may have that much in flight at once. Without them, grpc-go's
// server sizes its windows by its own estimate of the path, which held an
// upload near 4 MiB per round trip through the link: what limited the
// uploads measured was then the fake's estimator, not the client or the
// path. A zero c returns none: a server on loopback keeps grpc-go's
// defaults.
func ServerWindows(c Config) []grpc.ServerOption {
	if c.IsZero() {
		return nil
	}
	return []grpc.ServerOption{grpc.InitialWindowSize(StreamWindow), grpc.InitialConnWindowSize(ConnWindow)}
}

// segment is the most bytes a segment carries.
const segment = 32 << 10

// minBuffer is the least each direction of a connection buffers.
const minBuffer = 4 << 20

// buffer is what one direction of a connection holds at most: twice the
// path's bandwidth x delay (the bytes in flight on it), at least minBuffer,
// and with no bandwidth limit 64 MiB.
func (c Config) buffer() int {
	if c.Bandwidth <= 0 {
		return 64 << 20
	}
	bdp := float64(c.Bandwidth) * c.RTT.Seconds()
	return max(minBuffer, int(2*bdp))
}

// Listen returns a listener whose connections go through the simulated
// link. Closing it closes ln. A zero c returns ln itself.
func Listen(ln net.Listener, c Config) net.Listener {
	if c.IsZero() {
		return ln
	}
	return &listener{Listener: ln, cfg: c}
}

type listener struct {
	net.Listener
	cfg Config
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return Wrap(c, l.cfg), nil
}

// Wrap returns c behind the simulated link: what is written to the returned
// connection reaches c's peer after the link's delay, at its bandwidth, and
// what c's peer sends is read from it likewise. It starts two goroutines,
// which end when the connection is closed. A zero cfg returns c.
func Wrap(c net.Conn, cfg Config) net.Conn {
	if cfg.IsZero() {
		return c
	}
	n := max(cfg.buffer()/segment, 4)
	lc := &conn{raw: c, cfg: cfg, in: make(chan seg, n), out: make(chan seg, n), closed: make(chan struct{}),
		outDone: make(chan struct{})}
	lc.rd.init()
	lc.wd.init()
	go lc.pumpIn()
	go lc.pumpOut()
	return lc
}

// seg is a run of bytes and when it reaches the other end; eof marks the
// end of the stream (with err, if it was not a clean one), fin a half-close.
type seg struct {
	data []byte
	at   time.Time
	eof  bool
	fin  bool
	err  error
}

// conn is one connection behind the link.
type conn struct {
	raw net.Conn
	cfg Config

	in, out chan seg
	closed  chan struct{}
	once    sync.Once
	outDone chan struct{} // closed when pumpOut has ended

	// The Reader's state: the segment being read.
	rmu  sync.Mutex
	head seg
	has  bool
	rerr error // the inbound end, once reached

	wmu     sync.Mutex
	wpace   pacer
	werr    error
	rd, wd  deadline
	finSent bool
}

// pacer computes when a segment arrives: it departs once the previous one
// did, plus its length over the bandwidth, and arrives half the RTT later.
type pacer struct {
	last time.Time // the last departure
}

func (p *pacer) arrival(cfg Config, n int) time.Time {
	now := time.Now()
	dep := now
	if cfg.Bandwidth > 0 {
		if p.last.After(dep) {
			dep = p.last
		}
		dep = dep.Add(time.Duration(float64(n) / float64(cfg.Bandwidth) * float64(time.Second)))
		p.last = dep
	}
	return dep.Add(cfg.RTT / 2)
}

// pumpIn reads what the peer sent and queues it for Read, timed.
func (c *conn) pumpIn() {
	var p pacer
	buf := make([]byte, segment)
	for {
		n, err := c.raw.Read(buf)
		if n > 0 {
			s := seg{data: append([]byte(nil), buf[:n]...), at: p.arrival(c.cfg, n)}
			select {
			case c.in <- s:
			case <-c.closed:
				return
			}
		}
		if err != nil {
			s := seg{eof: true, at: p.arrival(c.cfg, 0)}
			if !errors.Is(err, io.EOF) {
				s.err = err
			}
			select {
			case c.in <- s:
			case <-c.closed:
			}
			return
		}
	}
}

// pumpOut writes the queued segments to the peer when they are due.
func (c *conn) pumpOut() {
	defer close(c.outDone)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		var s seg
		select {
		case s = <-c.out:
		case <-c.closed:
			return
		}
		if d := time.Until(s.at); d > 0 {
			t.Reset(d)
			select {
			case <-t.C:
			case <-c.closed:
				return
			}
		}
		if s.fin {
			if cw, ok := c.raw.(interface{ CloseWrite() error }); ok {
				_ = cw.CloseWrite()
			}
			continue
		}
		if _, err := c.raw.Write(s.data); err != nil {
			c.wmu.Lock()
			c.werr = err
			c.wmu.Unlock()
			// Unblock writers and the peer: the connection is dead.
			c.Close()
			return
		}
	}
}

// Read returns the bytes that have arrived, waiting for the next segment
// until it is due.
func (c *conn) Read(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	for {
		if c.rerr != nil {
			return 0, c.rerr
		}
		if !c.has {
			select {
			case c.head = <-c.in:
				c.has = true
			case <-c.closed:
				return 0, net.ErrClosed
			case <-c.rd.done():
				return 0, os.ErrDeadlineExceeded
			}
		}
		if d := time.Until(c.head.at); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-c.closed:
				t.Stop()
				return 0, net.ErrClosed
			case <-c.rd.done():
				t.Stop()
				return 0, os.ErrDeadlineExceeded
			}
		}
		if c.head.eof {
			c.rerr = io.EOF
			if c.head.err != nil {
				c.rerr = c.head.err
			}
			continue
		}
		n := copy(p, c.head.data)
		c.head.data = c.head.data[n:]
		if len(c.head.data) == 0 {
			c.head, c.has = seg{}, false
		}
		return n, nil
	}
}

// Write queues p to go out when the link lets it: it returns once p is
// queued, waiting while the link's buffer is full.
func (c *conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	written := 0
	for len(p) > 0 {
		if c.werr != nil {
			return written, c.werr
		}
		n := min(len(p), segment)
		s := seg{data: append([]byte(nil), p[:n]...)}
		s.at = c.wpace.arrival(c.cfg, n)
		select {
		case c.out <- s:
		case <-c.closed:
			if c.werr != nil {
				return written, c.werr
			}
			return written, net.ErrClosed
		case <-c.wd.done():
			return written, os.ErrDeadlineExceeded
		}
		written += n
		p = p[n:]
	}
	return written, nil
}

// CloseWrite half-closes the connection once what was written has gone
// out.
func (c *conn) CloseWrite() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.finSent {
		return nil
	}
	c.finSent = true
	select {
	case c.out <- seg{fin: true, at: c.wpace.arrival(c.cfg, 0)}:
		return nil
	case <-c.closed:
		return net.ErrClosed
	}
}

// Close closes the connection at once; what is still queued is dropped, as
// a reset would.
func (c *conn) Close() error {
	var err error
	c.once.Do(func() {
		close(c.closed)
		err = c.raw.Close()
		c.rd.stop()
		c.wd.stop()
	})
	return err
}

func (c *conn) LocalAddr() net.Addr  { return c.raw.LocalAddr() }
func (c *conn) RemoteAddr() net.Addr { return c.raw.RemoteAddr() }

func (c *conn) SetDeadline(t time.Time) error {
	c.rd.set(t)
	c.wd.set(t)
	return nil
}

func (c *conn) SetReadDeadline(t time.Time) error  { c.rd.set(t); return nil }
func (c *conn) SetWriteDeadline(t time.Time) error { c.wd.set(t); return nil }

// deadline is a settable deadline whose channel closes when it passes; a
// new setting wakes those waiting on the old one only if it has passed.
type deadline struct {
	mu    sync.Mutex
	ch    chan struct{}
	timer *time.Timer
}

func (d *deadline) init() { d.ch = make(chan struct{}) }

// done returns the channel of the current setting.
func (d *deadline) done() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ch
}

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	select {
	case <-d.ch:
		d.ch = make(chan struct{}) // passed before: a fresh one
	default:
	}
	switch {
	case t.IsZero():
	case !t.After(time.Now()):
		close(d.ch)
	default:
		ch := d.ch
		d.timer = time.AfterFunc(time.Until(t), func() {
			d.mu.Lock()
			defer d.mu.Unlock()
			if d.ch == ch {
				select {
				case <-ch:
				default:
					close(ch)
				}
			}
		})
	}
}

func (d *deadline) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
}

// ParseBandwidth reads a bandwidth as the fake's commands take it: a
// number of bytes per second with a unit, B/s, KB/s, MB/s, GB/s (powers of
// 1000) or KiB/s, MiB/s, GiB/s (powers of 1024), such as "100MB/s". "0" is
// unlimited.
func ParseBandwidth(s string) (int64, error) {
	if s == "0" || s == "" {
		return 0, nil
	}
	units := []struct {
		suffix string
		mult   float64
	}{
		{"GiB/s", 1 << 30}, {"MiB/s", 1 << 20}, {"KiB/s", 1 << 10},
		{"GB/s", 1e9}, {"MB/s", 1e6}, {"KB/s", 1e3}, {"B/s", 1},
	}
	for _, u := range units {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || f < 0 {
				break
			}
			return int64(f * u.mult), nil
		}
	}
	return 0, fmt.Errorf("bandwidth %q: want a number with B/s, KB/s, MB/s, GB/s, KiB/s, MiB/s or GiB/s, such as 100MB/s", s)
}

// FormatBandwidth writes b bytes per second in MB/s (or KB/s below 1 MB/s).
func FormatBandwidth(b int64) string {
	if b < 1e6 {
		return strconv.FormatFloat(float64(b)/1e3, 'f', -1, 64) + "KB/s"
	}
	return strconv.FormatFloat(float64(b)/1e6, 'f', -1, 64) + "MB/s"
}
