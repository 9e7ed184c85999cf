package link

import (
	"net"
	"sync"
	"time"
)

// closeLinger is how long after Close the link still delivers what was
// written before it; what would arrive later is dropped.
const closeLinger = time.Second

// aLongTimeAgo is a deadline that has passed.
var aLongTimeAgo = time.Unix(1, 0)

// Wrap returns c behind the simulated link: what is written to the returned
// connection reaches c's peer after the link's delay, at its bandwidth, and
// what c's peer sends is read from it likewise. On a server's accepted
// connection it is what Listen does; on a client's dialed one (in
// grpc.WithContextDialer, say) it puts the path on the client's side. A
// zero cfg returns c.
//
// The returned connection owns c. It runs one goroutine that reads what the
// peer sends, until the peer closes or the connection is closed, and one
// that writes what is queued, while anything is queued: an idle connection
// whose peer has gone runs none. After Close, what was written before is
// still delivered (as TCP does) for up to a second, and the last of these
// goroutines then closes c.
func Wrap(c net.Conn, cfg Config) net.Conn {
	if cfg.IsZero() {
		return c
	}
	lc := &conn{
		raw:      c,
		delay:    max(cfg.RTT, 0) / 2,
		bw:       max(cfg.Bandwidth, 0),
		limit:    cfg.Buffer(),
		seg:      segmentSize(cfg),
		closed:   make(chan struct{}),
		broken:   make(chan struct{}),
		inData:   make(chan struct{}, 1),
		inSpace:  make(chan struct{}, 1),
		outSpace: make(chan struct{}, 1),
	}
	go lc.pumpIn()
	return lc
}

// conn is one connection behind the link.
type conn struct {
	raw   net.Conn
	delay time.Duration // one way
	bw    int64
	limit int // bytes per direction, Config.Buffer
	seg   int // the most bytes of a segment

	closed    chan struct{} // closed by Close
	closeOnce sync.Once
	rawOnce   sync.Once
	rawErr    error

	// Inbound: pumpIn queues what the peer sent, Read takes it once due.
	rmu     sync.Mutex // one Read at a time
	rtimer  *time.Timer
	rd      deadline
	imu     sync.Mutex
	in      queue
	inData  chan struct{} // pumpIn queued a segment
	inSpace chan struct{} // Read took bytes

	// Outbound: Write queues, flush writes once due.
	wmu      sync.Mutex // one Write at a time; guards wpace and finSent
	wpace    pacer
	finSent  bool
	wd       deadline
	omu      sync.Mutex
	out      queue
	flushing bool          // a flush goroutine runs
	closing  bool          // Close was called: flush closes raw when done
	linger   time.Time     // after Close, what arrives later is dropped
	werr     error         // why writing to the peer failed, once it has
	broken   chan struct{} // closed with werr
	outSpace chan struct{} // flush took bytes
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (c *conn) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: c.raw.LocalAddr().Network(), Source: c.raw.LocalAddr(), Addr: c.raw.RemoteAddr(), Err: err}
}

func (c *conn) closeRaw() error {
	c.rawOnce.Do(func() { c.rawErr = c.raw.Close() })
	return c.rawErr
}

// Close closes the connection: pending and later Reads and Writes fail at
// once. What was written before still reaches the peer, as TCP delivers
// what is in its send buffer, if it arrives within a second; the
// underlying connection is closed after it.
func (c *conn) Close() error {
	first := false
	var err error
	c.closeOnce.Do(func() {
		first = true
		close(c.closed)
		c.rd.stop()
		c.wd.stop()
		c.omu.Lock()
		c.closing = true
		c.linger = time.Now().Add(closeLinger)
		flushing := c.flushing
		c.omu.Unlock()
		if flushing {
			// flush closes raw once the queue is out; meanwhile pumpIn must
			// end, and a write to a peer that does not read must too.
			_ = c.raw.SetReadDeadline(aLongTimeAgo)
			_ = c.raw.SetWriteDeadline(c.linger)
		} else {
			err = c.closeRaw()
		}
		c.imu.Lock()
		c.in.drop()
		c.imu.Unlock()
	})
	if !first {
		return c.opErr("close", net.ErrClosed)
	}
	return err
}

// LocalAddr returns the underlying connection's local address.
func (c *conn) LocalAddr() net.Addr { return c.raw.LocalAddr() }

// RemoteAddr returns the underlying connection's remote address.
func (c *conn) RemoteAddr() net.Addr { return c.raw.RemoteAddr() }

// SetDeadline sets the read and write deadlines.
func (c *conn) SetDeadline(t time.Time) error {
	if isClosed(c.closed) {
		return c.opErr("set", net.ErrClosed)
	}
	c.rd.set(t)
	c.wd.set(t)
	return nil
}

// SetReadDeadline sets the deadline of pending and later Reads.
func (c *conn) SetReadDeadline(t time.Time) error {
	if isClosed(c.closed) {
		return c.opErr("set", net.ErrClosed)
	}
	c.rd.set(t)
	return nil
}

// SetWriteDeadline sets the deadline of pending and later Writes: a Write
// waits only to queue its bytes, so the deadline bounds that wait.
func (c *conn) SetWriteDeadline(t time.Time) error {
	if isClosed(c.closed) {
		return c.opErr("set", net.ErrClosed)
	}
	c.wd.set(t)
	return nil
}
