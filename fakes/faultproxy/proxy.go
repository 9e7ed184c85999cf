package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// Proxy is a TCP proxy on loopback that forwards each connection it
// accepts to its target and injects faults into it. Make one with New; its
// methods may be called concurrently.
type Proxy struct {
	ln     *net.TCPListener
	target string
	random Random
	seed   int64
	held   Held // WithHeld

	ctx    context.Context // ended by Close: ends dials and the drop timer
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine and armed stall timer

	closeOnce sync.Once
	closeErr  error

	mu      sync.Mutex
	closed  bool
	conns   map[*conn]struct{}
	pending []Fault // scripted faults not taken yet, in order of Inject
	stats   Stats
	changed chan struct{} // closed and cleared when the proxy may have settled; nil when no Settle waits
}

// Stats counts what a proxy has done since New.
type Stats struct {
	// Conns is the number of connections forwarded to the target.
	Conns int64
	// Resets, Cuts and Stalls are the number of faults of each kind that
	// have fired, scripted or random.
	Resets, Cuts, Stalls int64
	// Drops is the number of connections reset by DropAll, called or
	// random.
	Drops int64
	// Aborts is the number of connections the proxy reset because one
	// endpoint reset its socket (or could no longer be written to): the
	// other endpoint is then reset too.
	Aborts int64
	// BytesUp and BytesDown are the bytes forwarded (written to the
	// destination socket) in each direction.
	BytesUp, BytesDown int64
	// HeldDropped is the bytes the proxy read and then dropped, never
	// delivered, because their connection was reset, cut, dropped or
	// closed while it held them, or because their destination had reset.
	HeldDropped int64
	// Delivers is the number of senders that reset their socket on a
	// connection that delivers what it held ([Deliver]), and
	// HeldDelivered the bytes held from them that were delivered after
	// their reset (those still being written when it came included).
	Delivers, HeldDelivered int64
}

// New starts a proxy listening on 127.0.0.1 (on a port of the system's
// choosing) that forwards each connection it accepts to target, a
// host:port. It returns an error if it cannot listen. It does not dial
// target until a connection arrives; if that dial fails, the client's
// connection is reset. It panics if an option is invalid (see
// WithRandom).
//
// The caller must Close the proxy to release its port and goroutines.
func New(target string, opts ...Option) (*Proxy, error) {
	var cfg config
	for _, o := range opts {
		o.apply(&cfg)
	}
	cfg.random = cfg.random.check()
	if cfg.held != Drop && cfg.held != Deliver {
		panic(fmt.Sprintf("faultproxy: invalid Held %d", int(cfg.held)))
	}

	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		ln:     ln,
		target: target,
		random: cfg.random,
		seed:   cfg.seed,
		held:   cfg.held,
		ctx:    ctx,
		cancel: cancel,
		conns:  make(map[*conn]struct{}),
	}
	p.wg.Add(1)
	go p.serve()
	if p.random.DropMin > 0 {
		p.wg.Add(1)
		go p.dropLoop()
	}
	return p, nil
}

// Addr returns the host:port to dial in place of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops accepting connections, resets every connection (dropping
// what the proxy holds, and ending any stall at once) and waits until
// every goroutine of the proxy has returned. It returns the error of
// closing the listener. Close is idempotent: later calls wait for the
// first to finish and return its result.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		for c := range p.conns {
			c.teardown(endReset)
		}
		p.mu.Unlock()
		p.cancel()
		p.closeErr = p.ln.Close()
		p.wg.Wait()
	})
	return p.closeErr
}

// Inject queues f. The next connection that carries a byte in f.Dir
// after this call, while holding no other scripted fault, takes f (the
// earliest queued fault of that direction first), and f fires once the
// proxy has forwarded f.After more bytes of f.Dir on it. A connection
// holds one scripted fault at a time: after a Stall fires, it may take the
// next one at once, counting its bytes from where the stall fired (so
// Inject of a Stall then of a Reset After 0 resets the connection when the
// stall ends, dropping what the stall held). A connection that
// ends, or whose source of f.Dir closes, before f fires puts f back at the
// head of the queue, for the next connection to take afresh.
//
// Inject panics if f is invalid: a kind or direction out of range, a
// negative After, a Stall without a positive duration, or a duration on
// another kind. Faults injected after Close never fire.
func (p *Proxy) Inject(f Fault) {
	f.check()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending = append(p.pending, f)
}

// DropAll resets every current connection, in both directions, dropping
// what the proxy holds for them, as a middlebox that loses its connection
// table does. Connections accepted later are forwarded as usual.
func (p *Proxy) DropAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.teardown(endReset)
		p.stats.Drops++
	}
}

// Settle waits until no connection is stalled or about to be reset or cut,
// and the proxy holds no bytes: everything it has read has been written
// to its destination or dropped. It returns nil then, or ctx.Err() if ctx
// ends first. Bytes still on their way to the proxy (in a sender's socket)
// are not counted, and a destination that does not read keeps Settle
// waiting.
func (p *Proxy) Settle(ctx context.Context) error {
	for {
		p.mu.Lock()
		if p.settled() {
			p.mu.Unlock()
			return nil
		}
		if p.changed == nil {
			p.changed = make(chan struct{})
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// settled reports whether no connection is stalled, firing a fault or
// holding bytes. p.mu must be held.
func (p *Proxy) settled() bool {
	for c := range p.conns {
		if !c.idle() {
			return false
		}
	}
	return true
}

// notify wakes Settle. p.mu must be held.
func (p *Proxy) notify() {
	if p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
}

// Stats returns the proxy's counters.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// nextFault removes and returns the first pending fault of direction d,
// or nil. p.mu must be held.
func (p *Proxy) nextFault(d Direction) *Fault {
	for i, f := range p.pending {
		if f.Dir == d {
			p.pending = append(p.pending[:i], p.pending[i+1:]...)
			return &f
		}
	}
	return nil
}

// giveBack puts f back at the head of the pending faults. p.mu must be
// held.
func (p *Proxy) giveBack(f Fault) {
	p.pending = append([]Fault{f}, p.pending...)
}

// serve accepts connections until the listener closes.
func (p *Proxy) serve() {
	defer p.wg.Done()
	for rank := uint64(1); ; {
		c, err := p.ln.AcceptTCP()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || p.ctx.Err() != nil {
				return
			}
			// Out of file descriptors, most likely: wait a little.
			t := time.NewTimer(10 * time.Millisecond)
			select {
			case <-p.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		p.wg.Add(1)
		go p.forward(c, rank)
		rank++
	}
}

// forward dials the target for client, the rank-th connection accepted,
// and starts forwarding between them.
func (p *Proxy) forward(client *net.TCPConn, rank uint64) {
	defer p.wg.Done()
	var d net.Dialer
	nc, err := d.DialContext(p.ctx, "tcp", p.target)
	if err != nil {
		client.SetLinger(0)
		client.Close()
		return
	}
	server := nc.(*net.TCPConn)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		client.SetLinger(0)
		server.SetLinger(0)
		client.Close()
		server.Close()
		return
	}
	p.stats.Conns++
	c := newConn(p, client, server, rand.New(rand.NewPCG(uint64(p.seed), rank)))
	c.held = p.random.held(rand.New(rand.NewPCG(uint64(p.seed)^heldSeed, rank)), p.held)
	p.conns[c] = struct{}{}
	p.wg.Add(4)
	for _, d := range []Direction{Up, Down} {
		go c.read(d)
		go c.write(d)
	}
}

// heldSeed derives the source of a connection's Held draw from the
// proxy's seed, apart from the source of its faults.
const heldSeed = 0x68656c64 // "held"

// dropLoop calls DropAll at random intervals until Close.
func (p *Proxy) dropLoop() {
	defer p.wg.Done()
	rng := rand.New(rand.NewPCG(uint64(p.seed), 0))
	for {
		t := time.NewTimer(p.random.interval(rng))
		select {
		case <-p.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		p.DropAll()
	}
}
