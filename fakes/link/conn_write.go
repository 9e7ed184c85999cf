package link

import (
	"errors"
	"net"
	"os"
	"syscall"
	"time"
)

// The outbound side of a connection: Write queues the bytes, flush
// writes them to the peer once they are due.

// maxBatch is the most segments written to the socket in one call.
const maxBatch = 64

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
