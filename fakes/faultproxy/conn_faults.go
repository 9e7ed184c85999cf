package faultproxy

import (
	"time"
)

// What the faults do to a connection: a sender's reset, the drain before
// a Reset or a Cut, stalls, and the end of the connection.

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
