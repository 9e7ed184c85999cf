package faultproxy

import (
	"bytes"
	"errors"
	"io"
)

// The readers of a connection: each reads its direction's source into
// the queue, counting the bytes and placing the faults in the stream.

// read reads direction d's source into its queue until the source closes
// or the connection ends. A clean close (io.EOF) is queued, to half-close
// the destination once the bytes before it are written; any other error
// means the source reset its socket or failed: the connection is reset,
// and what the proxy holds for it is dropped.
func (c *conn) read(d Direction) {
	defer c.p.wg.Done()
	mu := &c.p.mu
	src := c.ends[d]
	pa := &c.paths[d]
	buf := make([]byte, readSize)
	for {
		mu.Lock()
		for !c.dead && pa.held >= c.holdLimit() {
			c.cond.Wait()
		}
		dead := c.dead
		mu.Unlock()
		if dead {
			return
		}

		n, err := src.Read(buf)

		mu.Lock()
		if c.dead {
			mu.Unlock()
			return
		}
		if n > 0 {
			c.take(d, bytes.Clone(buf[:n]))
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if c.rule != nil && c.rule.Dir == d {
					// No more bytes of d: the fault can no longer fire here.
					c.p.giveBack(*c.rule)
					c.rule = nil
				}
				if !c.doomed && !c.toGone(d) {
					c.push(d, item{mark: markEOF})
				}
			} else {
				c.abort(d, true)
			}
			mu.Unlock()
			return
		}
		mu.Unlock()
	}
}

// take queues b, read from direction d's source, placing the faults due
// within it at their offsets. p.mu must be held.
func (c *conn) take(d Direction, b []byte) {
	pa := &c.paths[d]
	rnd := &c.p.random
	for {
		if c.doomed || c.toGone(d) {
			c.p.stats.HeldDropped += int64(len(b))
			return
		}
		if c.rule == nil && len(b) > 0 {
			if c.rule = c.p.nextFault(d); c.rule != nil {
				c.left = c.rule.After
			}
		}
		ruled := c.rule != nil && c.rule.Dir == d
		switch {
		case ruled && c.left == 0:
			c.fire(d, *c.rule)
			c.rule = nil
			continue
		case pa.randLeft == 0:
			c.fire(d, rnd.fault(c.rng, d))
			pa.randLeft = rnd.next(c.rng)
			continue
		case len(b) == 0:
			return
		}
		k := int64(len(b))
		if ruled {
			k = min(k, c.left)
		}
		if pa.randLeft > 0 {
			k = min(k, pa.randLeft)
		}
		if ruled {
			c.left -= k
		}
		if pa.randLeft > 0 {
			pa.randLeft -= k
		}
		c.push(d, item{mark: markData, data: b[:k]})
		b = b[k:]
	}
}

// fire queues f in direction d. p.mu must be held.
func (c *conn) fire(d Direction, f Fault) {
	c.push(d, item{mark: markFault, fault: f})
	if f.Kind != Stall {
		c.doomed = true
	}
}
