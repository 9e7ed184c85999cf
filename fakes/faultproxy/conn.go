package faultproxy

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

const (
	// readSize is the most one read from a socket takes.
	readSize = 32 << 10
	// readAhead is the most bytes a direction holds while it flows: the
	// proxy reads ahead of what it has written by at most this much.
	readAhead = 256 << 10
	// stallHold is the most bytes a direction holds while its connection
	// is stalled; past it, the proxy stops reading that direction's source
	// until the stall ends.
	stallHold = 64 << 20
	// writeBatch is the most bytes one write to a socket gives.
	writeBatch = 1 << 20
	// drainMax bounds how long a Reset or a Cut waits for the bytes
	// forwarded before it to reach the peers.
	drainMax = time.Second
)

// conn is one connection through the proxy: the client's socket, the
// server's, and a path of queued bytes and faults in each direction. A
// reader goroutine per direction reads its source into the path's queue,
// counting bytes and placing faults in the stream; a writer goroutine per
// direction writes the queue to the destination and fires the faults as
// it reaches them. All fields but ends, rng and done are guarded by p.mu.
type conn struct {
	p    *Proxy
	ends [2]*net.TCPConn // client, server: ends[d] is the source of direction d
	rng  *rand.Rand      // used by take, under p.mu
	cond *sync.Cond      // on p.mu: queues, stalls and state changed
	done chan struct{}   // closed by teardown

	paths [2]path // by Direction

	rule   *Fault // the scripted fault taken and not fired yet
	left   int64  // bytes of rule.Dir before rule fires
	doomed bool   // a Reset or Cut is queued: drop what is read after it

	stallEnd   time.Time   // zero: not stalled
	stallTimer *time.Timer // ends the stall; armed timers count in p.wg
	firing     bool        // a Reset or Cut waits for the bytes before it to arrive
	finished   int         // writers that have half-closed their destination
	dead       bool

	held     Held      // what becomes of the bytes held from a sender that resets
	aborted  bool      // a sender reset and its held bytes are being delivered (Deliver)
	abortDir Direction // if aborted: the direction whose source reset
}

// path is one direction of a connection.
type path struct {
	q        []item
	held     int64 // data bytes in q or being written
	sending  int64 // data bytes being written
	randLeft int64 // bytes before the next random fault; -1: none
}

type mark int

const (
	markData  mark = iota // data: bytes to write
	markFault             // fault: fire it here
	markEOF               // the source closed cleanly: half-close the destination
	markAbort             // the source reset, and what it sent before is delivered: reset the destination
)

type item struct {
	mark  mark
	data  []byte
	fault Fault
}

// end is how a connection ends.
type end int

const (
	endReset end = iota // RST to both endpoints
	endCut              // FIN to both endpoints
	endClose            // both endpoints closed cleanly: close the sockets
)

func newConn(p *Proxy, client, server *net.TCPConn, rng *rand.Rand) *conn {
	c := &conn{
		p:    p,
		ends: [2]*net.TCPConn{client, server},
		rng:  rng,
		cond: sync.NewCond(&p.mu),
		done: make(chan struct{}),
	}
	for i := range c.paths {
		c.paths[i].randLeft = p.random.next(rng)
	}
	return c
}

// idle reports whether c is neither stalled, nor firing a fault, nor
// holding a byte. p.mu must be held.
func (c *conn) idle() bool {
	if c.paused() {
		return false
	}
	for i := range c.paths {
		if len(c.paths[i].q) > 0 || c.paths[i].held > 0 {
			return false
		}
	}
	return true
}

// paused reports whether the writers must wait. p.mu must be held.
func (c *conn) paused() bool { return !c.stallEnd.IsZero() || c.firing }

// holdLimit returns how many bytes a direction may hold before its reader
// waits. p.mu must be held.
func (c *conn) holdLimit() int64 {
	if !c.stallEnd.IsZero() {
		return stallHold
	}
	return readAhead
}

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

// push appends it to direction d's queue. p.mu must be held.
func (c *conn) push(d Direction, it item) {
	pa := &c.paths[d]
	pa.q = append(pa.q, it)
	pa.held += int64(len(it.data))
	c.cond.Broadcast()
}

// pop removes the head of pa's queue.
func (pa *path) pop() {
	pa.q[0] = item{}
	pa.q = pa.q[1:]
	if len(pa.q) == 0 {
		pa.q = nil
	}
}

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

// abort handles the reset of direction src's source, noticed by src's
// reader (fromReader: a read of it failed) or by the writer to it, and
// reports whether the connection goes on to deliver what the proxy holds
// from it. With Drop, or once a Reset or a Cut is queued, the connection
// is reset at once and what it holds is dropped. With Deliver, what it
// holds for the other endpoint is delivered, with what src's reader still
// reads from the socket (the bytes the sender's kernel had sent before
// its RST), then that endpoint is reset; what it holds for the sender is
// dropped. The reset is queued when src's reader ends: behind the last
// byte it read. p.mu must be held.
func (c *conn) abort(src Direction, fromReader bool) bool {
	if c.dead {
		return false
	}
	if c.aborted && c.abortDir != src {
		// The other endpoint failed too: nothing is left to deliver to.
		c.teardown(endReset)
		return false
	}
	if !c.aborted {
		c.p.stats.Aborts++
		if c.held != Deliver || c.doomed {
			c.teardown(endReset)
			return false
		}
		c.aborted, c.abortDir = true, src
		c.p.stats.Delivers++
		back := &c.paths[1-src]
		c.p.stats.HeldDropped += back.held - back.sending
		clear(back.q)
		back.q, back.held = nil, back.sending
	}
	if fromReader {
		c.push(src, item{mark: markAbort})
	}
	return true
}

// drain waits until the bytes forwarded on c so far have reached both
// endpoints' TCP (acknowledged by them), so that a Reset or a Cut after
// them loses none: an RST discards what its socket has not sent yet. It
// gives up after drainMax, or when c ends. The writers are paused (c.firing)
// when it is called.
func (c *conn) drain() {
	deadline := time.Now().Add(drainMax)
	for wait := 100 * time.Microsecond; ; wait = min(2*wait, 10*time.Millisecond) {
		c.p.mu.Lock()
		busy := c.paths[Up].sending > 0 || c.paths[Down].sending > 0
		c.p.mu.Unlock()
		if !busy && unacked(c.ends[0]) == 0 && unacked(c.ends[1]) == 0 || time.Now().After(deadline) {
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-c.done:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// stall stops both directions of c for d, or until a later stall in
// progress ends. p.mu must be held.
func (c *conn) stall(d time.Duration) {
	end := time.Now().Add(d)
	if !end.After(c.stallEnd) {
		return
	}
	c.stopStall()
	c.stallEnd = end
	c.p.wg.Add(1)
	c.stallTimer = time.AfterFunc(d, func() {
		defer c.p.wg.Done()
		c.p.mu.Lock()
		defer c.p.mu.Unlock()
		if c.dead || !c.stallEnd.Equal(end) {
			return
		}
		c.stallEnd = time.Time{}
		c.stallTimer = nil
		c.cond.Broadcast()
		c.p.notify()
	})
}

// stopStall disarms the stall timer, if armed. p.mu must be held.
func (c *conn) stopStall() {
	if c.stallTimer != nil && c.stallTimer.Stop() {
		c.p.wg.Done()
	}
	c.stallTimer = nil
}

// teardown ends c as how says, drops what it holds and wakes its
// goroutines; the sockets' pending reads and writes return errors. A
// scripted fault c took and did not fire goes back to the proxy's queue.
// p.mu must be held.
func (c *conn) teardown(how end) {
	if c.dead {
		return
	}
	c.dead = true
	close(c.done)
	c.stopStall()
	c.stallEnd = time.Time{}
	c.firing = false
	for i := range c.paths {
		pa := &c.paths[i]
		c.p.stats.HeldDropped += pa.held - pa.sending
		pa.q, pa.held = nil, 0
	}
	if c.rule != nil {
		if !c.p.closed {
			c.p.giveBack(*c.rule)
		}
		c.rule = nil
	}
	delete(c.p.conns, c)
	switch how {
	case endReset:
		for _, e := range c.ends {
			e.SetLinger(0)
			e.Close()
		}
	case endCut:
		for _, e := range c.ends {
			e.CloseWrite()
		}
		for _, e := range c.ends {
			e.Close()
		}
	case endClose:
		for _, e := range c.ends {
			e.Close()
		}
	}
	c.cond.Broadcast()
	c.p.notify()
}
