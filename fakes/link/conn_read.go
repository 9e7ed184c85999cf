package link

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"time"
)

// The inbound side of a connection: pumpIn reads what the peer sends and
// queues it, Read takes it once it has arrived.

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
