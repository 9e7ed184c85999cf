package faultproxy

import (
	"net"
)

// The writers of a connection: each writes its direction's queue to the
// destination and fires the faults as it reaches them.

// write writes direction d's queue to its destination, firing faults as
// it reaches them, until the queue ends with a clean close or the
// connection ends.
func (c *conn) write(d Direction) {
	defer c.p.wg.Done()
	mu := &c.p.mu
	dst := c.ends[1-d]
	pa := &c.paths[d]
	mu.Lock()
	defer mu.Unlock()
	for {
		for !c.dead && (len(pa.q) == 0 || c.paused()) {
			c.cond.Wait()
		}
		if c.dead {
			return
		}
		switch it := pa.q[0]; it.mark {
		case markData:
			var bufs net.Buffers
			var n int64
			for len(pa.q) > 0 && pa.q[0].mark == markData && n < writeBatch {
				bufs = append(bufs, pa.q[0].data)
				n += int64(len(pa.q[0].data))
				pa.pop()
			}
			pa.sending = n
			late := c.aborted && c.abortDir == d
			mu.Unlock()
			_, err := bufs.WriteTo(dst)
			mu.Lock()
			pa.sending = 0
			if c.dead {
				return
			}
			if err != nil {
				// The destination reset its socket: it is the
				// source of the other direction.
				pa.held -= n
				c.p.stats.HeldDropped += n
				if c.abort(1-d, false) {
					continue // its bytes are delivered; this direction waits for the end
				}
				return
			}
			if late || c.aborted && c.abortDir == d { // the bytes in flight at the abort count
				c.p.stats.HeldDelivered += n
			}
			pa.held -= n
			if d == Up {
				c.p.stats.BytesUp += n
			} else {
				c.p.stats.BytesDown += n
			}
			c.cond.Broadcast() // the reader may wait for room
			c.p.notify()

		case markFault:
			pa.pop()
			if it.fault.Kind == Stall {
				c.p.stats.Stalls++
				c.stall(it.fault.Stall)
				c.p.notify()
				continue
			}
			c.firing = true
			mu.Unlock()
			c.drain()
			mu.Lock()
			if c.dead {
				return
			}
			if it.fault.Kind == Reset {
				c.p.stats.Resets++
				c.teardown(endReset)
			} else {
				c.p.stats.Cuts++
				c.teardown(endCut)
			}
			return

		case markAbort:
			// Every byte held from the source that reset is
			// written: reset the destination after them.
			pa.pop()
			c.firing = true
			mu.Unlock()
			c.drain()
			mu.Lock()
			if c.dead {
				return
			}
			c.teardown(endReset)
			return

		case markEOF:
			pa.pop()
			mu.Unlock()
			dst.CloseWrite()
			mu.Lock()
			if c.dead {
				return
			}
			c.p.notify()
			if c.finished++; c.finished == 2 || c.aborted {
				// With aborted, the sender of d closed cleanly and
				// then reset: its bytes are delivered, and the
				// other direction will never finish.
				c.teardown(endClose)
			}
			return
		}
	}
}

// toGone reports whether direction d's destination is a sender that reset
// while its held bytes are delivered: what d carries is dropped. p.mu
// must be held.
func (c *conn) toGone(d Direction) bool { return c.aborted && c.abortDir == 1-d }
