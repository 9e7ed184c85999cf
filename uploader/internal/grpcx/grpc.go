package grpcx

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/objup/objup/uploader/internal/xfer"

	gtransport "google.golang.org/api/transport/grpc"
	"google.golang.org/grpc"
)

// grpcTransport sends uploads over storage v2 gRPC: a one-shot WriteObject,
// or a resumable session (StartResumableWrite, QueryWriteStatus) whose data
// streams on BidiWriteObject.
//
// It keeps a pool of connections (option.WithGRPCConnectionPool) for the
// data and, beside a pool of two or more, one more connection, the lane,
// for small calls; each call takes the least loaded connection of its kind
// (see pick). A front end caps the concurrent streams of one HTTP/2
// connection (about 100 at GCS), and a call on a full connection would
// queue behind the others instead of using an idle one; and a small call
// on a connection busy with 2 MiB messages waits behind their bytes in the
// connection's socket.
type grpcTransport struct {
	pool     closer
	conns    []*grpcConn // the data's
	lane     *grpcConn   // the small calls', or nil
	callOpts []grpc.CallOption
	mu       sync.Mutex // orders the picks of data calls
}

// closer closes a pool of connections.
type closer interface{ Close() error }

// grpcConn is one connection of the pool and its calls in flight.
type grpcConn struct {
	*grpc.ClientConn
	active  atomic.Int32 // calls in flight
	streams atomic.Int32 // of which carry an object's data
	route   xfer.Route   // its place in the pool, 1 on (the lane's is xfer.NoRoute)
	_       [52]byte     // keep counters of different connections off one cache line
}

// New returns the gRPC transport over the pool p (and lane, for small
// calls, or nil). It takes the pool's connections: Conn returns them in turn.
func New(p gtransport.ConnPool, lane *grpc.ClientConn, callOpts []grpc.CallOption) xfer.Transport {
	g := &grpcTransport{pool: p, callOpts: callOpts}
	if lane != nil {
		g.lane = &grpcConn{ClientConn: lane}
	}
	seen := make(map[*grpc.ClientConn]bool)
	for range p.Num() {
		if c := p.Conn(); !seen[c] {
			seen[c] = true
			g.conns = append(g.conns, &grpcConn{ClientConn: c, route: xfer.Route(len(g.conns) + 1)})
		}
	}
	return g
}

// routed returns the pool's connection that r names, or nil for
// xfer.NoRoute.
func (g *grpcTransport) routed(r xfer.Route) *grpcConn {
	if r <= xfer.NoRoute || int(r) > len(g.conns) {
		return nil
	}
	return g.conns[r-1]
}

// streamsPerConn is the number of concurrent streams a GCS front end
// takes on one HTTP/2 connection (SETTINGS_MAX_CONCURRENT_STREAMS, commonly
// 100): past it, small calls overflow from the lane to the pool.
const streamsPerConn = 100

// pick returns a connection for a call, with the call counted; done (or
// doneData) must be called when the call ends. Calls that carry an object's
// data (a resumable session's stream, a one-shot write of several messages)
// take the pool's connection with the fewest such calls, the last of those:
// large uploads spread evenly, so n connections take n times a front end's
// cap of streams. Small calls (one-shot writes of one message, session
// starts, status queries) take the lane while it has fewer than
// streamsPerConn calls in flight; past that, or without a lane, the pool's
// connection with the fewest data calls, the first of those, then the
// fewest calls in flight, so a lone caller keeps to one warm connection.
func (g *grpcTransport) pick(data bool) *grpcConn {
	conns := g.conns
	best := conns[0]
	switch {
	case !data && g.lane != nil && g.lane.active.Load() < streamsPerConn:
		best = g.lane
	case data:
		// Under a lock, so concurrent sessions never pile onto one
		// connection; a data call is one per session, not per message.
		g.mu.Lock()
		best = conns[len(conns)-1]
		n := best.streams.Load()
		for i := len(conns) - 2; i >= 0; i-- {
			if m := conns[i].streams.Load(); m < n {
				best, n = conns[i], m
			}
		}
		best.streams.Add(1)
		g.mu.Unlock()
	case len(conns) > 1:
		ns, na := best.streams.Load(), best.active.Load()
		for _, c := range conns[1:] {
			ms, ma := c.streams.Load(), c.active.Load()
			if ms < ns || ms == ns && ma < na {
				best, ns, na = c, ms, ma
			}
		}
	}
	best.active.Add(1)
	return best
}

// use counts a call on c, a connection an earlier call took; done must be
// called when the call ends.
func (c *grpcConn) use() { c.active.Add(1) }

// useData counts a data call on c, a connection an earlier call took;
// doneData must be called when the call ends.
func (c *grpcConn) useData() {
	c.streams.Add(1)
	c.active.Add(1)
}

// done ends a call that pick or use counted.
func (c *grpcConn) done() { c.active.Add(-1) }

// doneData ends a data call that pick or useData counted.
func (c *grpcConn) doneData() {
	c.streams.Add(-1)
	c.active.Add(-1)
}

func (g *grpcTransport) Close() error {
	err := g.pool.Close()
	if g.lane != nil {
		err = errors.Join(err, g.lane.Close())
	}
	return err
}

func (g *grpcTransport) Names() *xfer.CallNames { return &grpcNames }

// grpcNames are the names of the gRPC calls.
var grpcNames = xfer.CallNames{Write: "WriteObject", Start: "StartResumableWrite", Query: "QueryWriteStatus", Stream: "BidiWriteObject", Compose: "ComposeObject", Delete: "DeleteObject"}
