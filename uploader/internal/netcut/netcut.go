// Package netcut dials TCP connections that can be cut: closed with a
// reset (SO_LINGER 0) instead of a FIN, so that the bytes the kernel still
// holds for the peer (its send and retransmission queues) are discarded
// rather than delivered later.
//
// An upload that gives up on a request (its attempt timed out, its context
// ended) must make sure the request cannot reach the service after the
// upload has moved on: after a retry succeeded, or after the upload deleted
// what it had written. A connection closed with a FIN keeps sending what
// its kernel holds, so a request stuck behind a stalled path can still
// arrive seconds later; a reset drops it. What the service received whole
// before the reset may still be applied: no client can take that back.
//
// Every connection a Dialer makes is closed with a reset, whoever closes
// it (net/http closing the connection of an abandoned request, gRPC
// closing a transport), and Cut resets a live connection by its local
// address, which gRPC reports for each call (peer.Peer.LocalAddr).
package netcut

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Dialer dials TCP connections that close with a reset and can be cut by
// their local address. The zero value is ready to use; it is safe for
// concurrent use.
type Dialer struct {
	net.Dialer

	mu    sync.Mutex
	conns map[netip.AddrPort]*conn
	cuts  atomic.Int64
}

// DialContext dials addr on network (a TCP network), as net.Dialer does,
// for an http.Transport.
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := d.Dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c, nil
	}
	key := addrPort(tc.LocalAddr())
	cc := &conn{TCPConn: tc, d: d, key: key}
	cc.last.Store(int64(since()))
	d.mu.Lock()
	if d.conns == nil {
		d.conns = make(map[netip.AddrPort]*conn)
	}
	d.conns[key] = cc
	d.mu.Unlock()
	return cc, nil
}

// DialGRPC dials addr over TCP, for grpc.WithContextDialer.
func (d *Dialer) DialGRPC(ctx context.Context, addr string) (net.Conn, error) {
	return d.DialContext(ctx, "tcp", addr)
}

// Cut resets the connection whose local address is local and reports
// whether this Dialer made it and it was still open.
func (d *Dialer) Cut(local net.Addr) bool {
	if d == nil || local == nil {
		return false
	}
	d.mu.Lock()
	c := d.conns[addrPort(local)]
	d.mu.Unlock()
	if c == nil {
		return false
	}
	d.cuts.Add(1)
	c.Close()
	return true
}

// CutSilent resets every connection that has received nothing for at
// least d (nor since it was dialled, if that is longer ago), and returns how
// many it reset. A connection that carried a call answered by nothing
// for d is one of them: a live connection always hears something within a
// call's timeout (answers, flow-control updates, keepalive acks), and an
// idle one only has to be dialled again.
func (d *Dialer) CutSilent(quiet time.Duration) int {
	if d == nil {
		return 0
	}
	limit := since() - quiet
	d.mu.Lock()
	var silent []*conn
	for _, c := range d.conns {
		if c.last.Load() <= int64(limit) {
			silent = append(silent, c)
		}
	}
	d.mu.Unlock()
	for _, c := range silent {
		d.cuts.Add(1)
		c.Close()
	}
	return len(silent)
}

// Cuts returns how many connections Cut and CutSilent reset.
func (d *Dialer) Cuts() int64 { return d.cuts.Load() }

// Open returns how many of the Dialer's connections are open.
func (d *Dialer) Open() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.conns)
}

func addrPort(a net.Addr) netip.AddrPort {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.AddrPort()
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return ap
}

// conn is a connection of a Dialer: its Close resets it.
type conn struct {
	*net.TCPConn
	d    *Dialer
	key  netip.AddrPort
	last atomic.Int64 // since() when it last received bytes, or was dialled
	once sync.Once
	err  error
}

// Read reads from the connection and notes when bytes came.
func (c *conn) Read(b []byte) (int, error) {
	n, err := c.TCPConn.Read(b)
	if n > 0 {
		c.last.Store(int64(since()))
	}
	return n, err
}

var epoch = time.Now()

// since is the monotonic time since the package started.
func since() time.Duration { return time.Since(epoch) }

// Close closes the connection with a reset: what the kernel has not
// delivered yet is dropped.
func (c *conn) Close() error {
	c.once.Do(func() {
		c.d.mu.Lock()
		if c.d.conns[c.key] == c {
			delete(c.d.conns, c.key)
		}
		c.d.mu.Unlock()
		_ = c.TCPConn.SetLinger(0)
		c.err = c.TCPConn.Close()
	})
	return c.err
}
