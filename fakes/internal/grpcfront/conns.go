package grpcfront

import (
	"context"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"

	"github.com/objup/objup/fakes/link"
)

// conns counts the calls of each gRPC connection, through a stats handler:
// an increment and a decrement per call, nothing else on its path.
type Conns struct {
	mu  sync.Mutex
	all []*connCount // every connection since the server started, in order
}

type connCount struct {
	remote              string
	active, peak, calls atomic.Int64
	closed              atomic.Bool
}

type connKey struct{}

func (c *Conns) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	cc := &connCount{}
	if info.RemoteAddr != nil {
		cc.remote = info.RemoteAddr.String()
	}
	c.mu.Lock()
	c.all = append(c.all, cc)
	c.mu.Unlock()
	return context.WithValue(ctx, connKey{}, cc)
}

func (c *Conns) HandleConn(ctx context.Context, s stats.ConnStats) {
	if _, ok := s.(*stats.ConnEnd); ok {
		if cc, _ := ctx.Value(connKey{}).(*connCount); cc != nil {
			cc.closed.Store(true)
		}
	}
}

func (c *Conns) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

func (c *Conns) HandleRPC(ctx context.Context, s stats.RPCStats) {
	cc, _ := ctx.Value(connKey{}).(*connCount)
	if cc == nil {
		return
	}
	switch s.(type) {
	case *stats.Begin:
		cc.calls.Add(1)
		n := cc.active.Add(1)
		for p := cc.peak.Load(); n > p && !cc.peak.CompareAndSwap(p, n); p = cc.peak.Load() {
		}
	case *stats.End:
		cc.active.Add(-1)
	}
}

// serverOptions are the gRPC server options of the stream cap and the
// connection counting, which come together: a stats handler makes gRPC
// allocate a record per message, a cost a server without a cap does not
// pay.
func (c *Conns) ServerOptions(maxStreams int, l link.Config) []grpc.ServerOption {
	opts := link.ServerWindows(l)
	if maxStreams <= 0 {
		return opts
	}
	return append(opts, grpc.StatsHandler(c), grpc.MaxConcurrentStreams(uint32(maxStreams)))
}

// stats reports the calls of every connection, in the order they were
// accepted.
func (c *Conns) Stats() []ConnStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]ConnStats, len(c.all))
	for i, cc := range c.all {
		out[i] = ConnStats{Remote: cc.remote, Active: cc.active.Load(), Peak: cc.peak.Load(), Calls: cc.calls.Load(), Open: !cc.closed.Load()}
	}
	return out
}

// ConnStats is one gRPC connection's calls, as [Server.Conns] reports them.
type ConnStats struct {
	// Remote is the client's address.
	Remote string
	// Active counts the calls in flight; Peak the most at once; Calls
	// every call.
	Active, Peak, Calls int64
	// Open says whether the connection is still open.
	Open bool
}
