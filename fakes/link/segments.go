package link

import (
	"bytes"
	"math"
	"sync"
	"time"
)

// Segments: the runs of bytes the link carries, the queue of one
// direction, and the pacing of a direction at the bandwidth.

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

// segPool holds the buffers of full-size segments.
var segPool = sync.Pool{New: func() any { b := make([]byte, segment); return &b }}

func segmentSize(cfg Config) int {
	if cfg.Bandwidth <= 0 {
		return segment
	}
	return int(min(max(cfg.Bandwidth/1000, minSegment), segment))
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
