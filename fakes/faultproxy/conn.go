package faultproxy

import (
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
