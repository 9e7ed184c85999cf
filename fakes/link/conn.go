package link

import (
	"bytes"
	"errors"
	"io"
	"math"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// segment is the most bytes one segment carries. Write cuts what it is
// given into segments, and the reader of the peer's bytes takes at most one
// segment at a time from the socket. A segment is paced and delayed as a
// whole (store and forward), so at low bandwidths segments are smaller, a
// millisecond's worth of bytes but at least minSegment, and a first byte
// does not wait for many more.
const (
	segment    = 32 << 10
	minSegment = 4 << 10
)

// segCost is what the link counts for a segment on top of its bytes, its
// bookkeeping: many tiny writes are bounded in memory too.
const segCost = 128

// maxBatch is the most segments written to the socket in one call.
const maxBatch = 64

// closeLinger is how long after Close the link still delivers what was
// written before it; what would arrive later is dropped.
const closeLinger = time.Second

// segPool holds the buffers of full-size segments.
var segPool = sync.Pool{New: func() any { b := make([]byte, segment); return &b }}

// aLongTimeAgo is a deadline that has passed.
var aLongTimeAgo = time.Unix(1, 0)

func segmentSize(cfg Config) int {
	if cfg.Bandwidth <= 0 {
		return segment
	}
	return int(min(max(cfg.Bandwidth/1000, minSegment), segment))
}

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

// seg is a run of bytes and when it reaches the other end. eof marks the
// end of what the peer sent (with err, if it did not end cleanly); fin, a
// half-close to pass on.
type seg struct {
	buf  *[]byte // the pooled buffer data lies in, or nil
	data []byte
	at   time.Time
	eof  bool
	fin  bool
	err  error
}

// queue is one direction's segments in order, and what they count
// against the link's buffer.
type queue struct {
	segs  []seg
	head  int
	bytes int
}

func (q *queue) len() int    { return len(q.segs) - q.head }
func (q *queue) front() *seg { return &q.segs[q.head] }
func (q *queue) fits(n, limit int) bool {
	return q.len() == 0 || q.bytes+n+segCost <= limit
}

func (q *queue) push(s seg) {
	if q.head > 0 && len(q.segs) == cap(q.segs) {
		n := copy(q.segs, q.segs[q.head:])
		clear(q.segs[n:])
		q.segs, q.head = q.segs[:n], 0
	}
	q.segs = append(q.segs, s)
	q.bytes += len(s.data) + segCost
}

// pop removes the front segment and gives its buffer back.
func (q *queue) pop() {
	s := &q.segs[q.head]
	q.bytes -= len(s.data) + segCost
	if s.buf != nil {
		segPool.Put(s.buf)
	}
	*s = seg{}
	q.head++
	if q.head == len(q.segs) {
		q.segs, q.head = q.segs[:0], 0
	}
}

// drop empties the queue.
func (q *queue) drop() {
	for q.len() > 0 {
		q.pop()
	}
}

// newSeg copies p into a segment.
func newSeg(p []byte) seg {
	if len(p) >= segment/2 {
		bp := segPool.Get().(*[]byte)
		return seg{buf: bp, data: (*bp)[:copy(*bp, p)]}
	}
	return seg{data: bytes.Clone(p)}
}

// pacer times the segments of one direction: a segment departs once the
// previous one has, plus its length over the bandwidth, and arrives the
// one-way delay later.
type pacer struct {
	last time.Time // the last departure
}

func (p *pacer) arrival(c *conn, n int) time.Time {
	now := time.Now()
	if c.bw <= 0 {
		return now.Add(c.delay)
	}
	dep := now
	if p.last.After(dep) {
		dep = p.last
	}
	dep = dep.Add(time.Duration(math.Ceil(float64(n) * float64(time.Second) / float64(c.bw))))
	p.last = dep
	return dep.Add(c.delay)
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

// pumpIn reads what the peer sends and queues it for Read, timed, while
// the inbound queue has room; it ends at the peer's end or at Close.
func (c *conn) pumpIn() {
	var p pacer
	var bp *[]byte
	defer func() {
		if bp != nil {
			segPool.Put(bp)
		}
	}()
	for {
		if !c.waitInSpace() {
			return
		}
		if bp == nil {
			bp = segPool.Get().(*[]byte)
		}
		n, err := c.raw.Read((*bp)[:c.seg])
		if isClosed(c.closed) {
			return
		}
		if n > 0 {
			s := seg{at: p.arrival(c, n)}
			if n >= segment/2 {
				s.buf, s.data, bp = bp, (*bp)[:n], nil
			} else {
				s.data = bytes.Clone((*bp)[:n])
			}
			c.pushIn(s)
		}
		if err != nil {
			s := seg{eof: true, at: p.arrival(c, 0)}
			if !errors.Is(err, io.EOF) {
				s.err = err
			}
			c.pushIn(s)
			return
		}
	}
}

// waitInSpace waits until the inbound queue has room for a segment; false
// once the connection is closed.
func (c *conn) waitInSpace() bool {
	for {
		c.imu.Lock()
		ok := c.in.fits(c.seg, c.limit)
		c.imu.Unlock()
		if ok {
			return true
		}
		select {
		case <-c.inSpace:
		case <-c.closed:
			return false
		}
	}
}

func (c *conn) pushIn(s seg) {
	c.imu.Lock()
	c.in.push(s)
	c.imu.Unlock()
	signal(c.inData)
}

// Read returns the bytes that have arrived, waiting for the next ones until
// they are due; io.EOF once the peer has closed and all it sent was read.
func (c *conn) Read(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	for {
		if isClosed(c.closed) {
			return 0, c.opErr("read", net.ErrClosed)
		}
		dl := c.rd.done()
		if isClosed(dl) {
			return 0, c.opErr("read", os.ErrDeadlineExceeded)
		}
		if len(p) == 0 {
			return 0, nil
		}
		n, wait, end := c.take(p)
		if n > 0 {
			signal(c.inSpace)
			return n, nil
		}
		if end != nil {
			return 0, end
		}
		var due <-chan time.Time
		if wait > 0 {
			if c.rtimer == nil {
				c.rtimer = time.NewTimer(wait)
			} else {
				c.rtimer.Reset(wait)
			}
			due = c.rtimer.C
		}
		select {
		case <-c.inData:
		case <-due:
		case <-c.closed:
		case <-dl:
		}
	}
}

// take copies into p what has arrived; otherwise it returns how long until
// the next segment is due (0 if none is queued), or the peer's end.
func (c *conn) take(p []byte) (n int, wait time.Duration, end error) {
	c.imu.Lock()
	defer c.imu.Unlock()
	now := time.Now()
	for c.in.len() > 0 && n < len(p) {
		s := c.in.front()
		if d := s.at.Sub(now); d > 0 {
			if n == 0 {
				wait = d
			}
			break
		}
		if s.eof {
			// Left queued: every later Read gets the end too.
			if n == 0 {
				end = io.EOF
				if s.err != nil {
					end = s.err
				}
			}
			break
		}
		k := copy(p[n:], s.data)
		n += k
		s.data = s.data[k:]
		c.in.bytes -= k
		if len(s.data) == 0 {
			c.in.pop()
		}
	}
	return n, wait, end
}

// Write queues p to go out when the link lets it: it returns once all of
// p is queued, waiting while the link's buffer is full.
func (c *conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	written := 0
	for {
		if isClosed(c.closed) {
			return written, c.opErr("write", net.ErrClosed)
		}
		dl := c.wd.done()
		if isClosed(dl) {
			return written, c.opErr("write", os.ErrDeadlineExceeded)
		}
		if c.finSent {
			return written, c.opErr("write", syscall.EPIPE)
		}
		if written == len(p) {
			return written, nil
		}
		n := min(len(p)-written, c.seg)
		c.omu.Lock()
		if c.werr != nil {
			err := c.werr
			c.omu.Unlock()
			return written, err
		}
		if c.closing {
			c.omu.Unlock()
			return written, c.opErr("write", net.ErrClosed)
		}
		if !c.out.fits(n, c.limit) {
			c.omu.Unlock()
			select {
			case <-c.outSpace:
			case <-c.closed:
			case <-dl:
			case <-c.broken:
			}
			continue
		}
		s := newSeg(p[written : written+n])
		s.at = c.wpace.arrival(c, n)
		c.pushOut(s)
		c.omu.Unlock()
		written += n
	}
}

// pushOut queues s and starts a flush if none runs; c.omu is held.
func (c *conn) pushOut(s seg) {
	c.out.push(s)
	if !c.flushing {
		c.flushing = true
		go c.flush()
	}
}

// CloseWrite half-closes the connection once what was written before has
// gone out: the peer reads io.EOF after it, and may still send. Writes
// after it fail. The underlying connection must have a CloseWrite method,
// as *net.TCPConn does.
func (c *conn) CloseWrite() error {
	if _, ok := c.raw.(interface{ CloseWrite() error }); !ok {
		return c.opErr("close", errors.New("link: the underlying connection cannot half-close"))
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if isClosed(c.closed) {
		return c.opErr("close", net.ErrClosed)
	}
	if c.finSent {
		return nil
	}
	c.omu.Lock()
	defer c.omu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	c.finSent = true
	c.pushOut(seg{fin: true, at: c.wpace.arrival(c, 0)})
	return nil
}

// flush writes the queued segments to the peer as they fall due, and ends
// once none is left. After Close it closes the underlying connection.
func (c *conn) flush() {
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	closed := c.closed // nil once seen, so that waits do not spin on it
	var bufs net.Buffers
	for {
		c.omu.Lock()
		if c.werr != nil || c.out.len() == 0 {
			c.flushing = false
			closing := c.closing
			c.omu.Unlock()
			if closing {
				c.closeRaw()
			}
			return
		}
		at := c.out.front().at
		if c.closing && at.After(c.linger) {
			c.fail(os.ErrDeadlineExceeded)
			c.omu.Unlock()
			continue
		}
		c.omu.Unlock()

		if wait := time.Until(at); wait > 0 {
			if t == nil {
				t = time.NewTimer(wait)
			} else {
				t.Reset(wait)
			}
			select {
			case <-t.C:
			case <-closed:
				closed = nil
				continue
			}
		}

		// Write every segment due by now, in one call (writev on TCP).
		c.omu.Lock()
		now := time.Now()
		bufs = bufs[:0]
		fin := false
		for i := c.out.head; i < len(c.out.segs) && len(bufs) < maxBatch; i++ {
			s := &c.out.segs[i]
			if s.at.After(now) {
				break
			}
			if s.fin {
				fin = len(bufs) == 0
				break
			}
			bufs = append(bufs, s.data)
		}
		k := len(bufs)
		c.omu.Unlock()

		var err error
		switch {
		case fin:
			k = 1
			err = c.raw.(interface{ CloseWrite() error }).CloseWrite()
		case k > 0:
			wb := bufs
			_, err = wb.WriteTo(c.raw)
		default:
			continue
		}

		c.omu.Lock()
		for range k {
			c.out.pop()
		}
		if err != nil && c.werr == nil {
			c.fail(err)
		}
		c.omu.Unlock()
		signal(c.outSpace)
	}
}

// fail records why writing failed and drops what is queued; c.omu is held.
func (c *conn) fail(err error) {
	c.werr = err
	c.out.drop()
	close(c.broken)
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
