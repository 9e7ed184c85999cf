package faultproxy_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/objup/objup/fakes/faultproxy"
)

// TestPassThrough: without faults, bytes cross byte-exact both ways at
// once, and a clean close on each side reaches the other.
func TestPassThrough(t *testing.T) {
	for _, size := range []int{1, 100 << 10, 3 << 20} {
		t.Run(byteSize(size), func(t *testing.T) {
			leakCheck(t)
			ln := newTarget(t)
			p := newProxy(t, ln.Addr().String())
			client, server := dial(t, p, ln)
			up, down := random(size, 1), random(size, 2)

			gotUp, gotDown := readAsync(server), readAsync(client)
			errs := make(chan error, 2)
			for _, w := range []struct {
				c    *net.TCPConn
				data []byte
			}{{client, up}, {server, down}} {
				go func() {
					_, err := w.c.Write(w.data)
					if err == nil {
						err = w.c.CloseWrite()
					}
					errs <- err
				}()
			}
			for range 2 {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			for _, r := range []struct {
				name string
				got  readResult
				want []byte
			}{{"server", <-gotUp, up}, {"client", <-gotDown, down}} {
				checkEnd(t, r.name, r.got.err, "eof")
				if !bytes.Equal(r.got.data, r.want) {
					t.Errorf("%s got %d bytes, want the %d sent", r.name, len(r.got.data), len(r.want))
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			if err := p.Settle(ctx); err != nil {
				t.Fatal(err)
			}
			st := p.Stats()
			if st.Conns != 1 || st.BytesUp != int64(size) || st.BytesDown != int64(size) || st.HeldDropped != 0 {
				t.Errorf("stats %+v, want 1 conn and %d bytes each way", st, size)
			}
		})
	}
}

func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// TestResetAndCut: a Reset or a Cut after N bytes of one direction
// delivers exactly N bytes of it, then ends both endpoints: with a reset
// for Reset, with io.EOF for Cut.
func TestResetAndCut(t *testing.T) {
	tests := []struct {
		name  string
		fault faultproxy.Fault
		end   string // how each endpoint's read ends
	}{
		{"reset up after 0", faultproxy.Fault{Kind: faultproxy.Reset, Dir: faultproxy.Up}, "reset"},
		{"reset up after 1000", faultproxy.Fault{Kind: faultproxy.Reset, Dir: faultproxy.Up, After: 1000}, "reset"},
		{"reset down after 1000", faultproxy.Fault{Kind: faultproxy.Reset, Dir: faultproxy.Down, After: 1000}, "reset"},
		{"reset up after 300000", faultproxy.Fault{Kind: faultproxy.Reset, Dir: faultproxy.Up, After: 300000}, "reset"},
		{"cut up after 0", faultproxy.Fault{Kind: faultproxy.Cut, Dir: faultproxy.Up}, "eof"},
		{"cut up after 1000", faultproxy.Fault{Kind: faultproxy.Cut, Dir: faultproxy.Up, After: 1000}, "eof"},
		{"cut down after 1000", faultproxy.Fault{Kind: faultproxy.Cut, Dir: faultproxy.Down, After: 1000}, "eof"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leakCheck(t)
			ln := newTarget(t)
			p := newProxy(t, ln.Addr().String())
			p.Inject(tt.fault)
			client, server := dial(t, p, ln)
			sender, receiver := client, server
			if tt.fault.Dir == faultproxy.Down {
				sender, receiver = server, client
			}
			n := int(tt.fault.After)
			data := random(n+1000, 3)

			received := readAsync(receiver)
			// The whole write fits in the sockets' buffers: it returns
			// before the fault, which fires as the proxy forwards it.
			if _, err := sender.Write(data); err != nil {
				t.Fatal(err)
			}
			got := <-received
			if !bytes.Equal(got.data, data[:n]) {
				t.Errorf("receiver got %d bytes, want the first %d sent", len(got.data), n)
			}
			checkEnd(t, "receiver", got.err, tt.end)
			checkEnd(t, "sender", readAll(sender).err, tt.end)

			st := p.Stats()
			want := faultproxy.Stats{Conns: 1, Resets: 1}
			if tt.fault.Kind == faultproxy.Cut {
				want = faultproxy.Stats{Conns: 1, Cuts: 1}
			}
			if tt.fault.Dir == faultproxy.Up {
				want.BytesUp = int64(n)
			} else {
				want.BytesDown = int64(n)
			}
			st.HeldDropped = 0 // how much the proxy read past the fault depends on timing
			if st != want {
				t.Errorf("stats %+v, want %+v", st, want)
			}
		})
	}
}

// TestStall: a stall holds the bytes of both directions until it ends,
// then delivers them in order; Settle returns once they are delivered.
func TestStall(t *testing.T) {
	const stall = 200 * time.Millisecond
	for _, tt := range []struct {
		name string
		dir  faultproxy.Direction
	}{{"up", faultproxy.Up}, {"down", faultproxy.Down}} {
		t.Run(tt.name, func(t *testing.T) {
			leakCheck(t)
			ln := newTarget(t)
			p := newProxy(t, ln.Addr().String())
			const before = 1000 // bytes forwarded before the stall
			p.Inject(faultproxy.Fault{Kind: faultproxy.Stall, Dir: tt.dir, After: before, Stall: stall})
			client, server := dial(t, p, ln)
			sender, receiver := client, server
			if tt.dir == faultproxy.Down {
				sender, receiver = server, client
			}
			data := random(before+5000, 4)
			back := random(3000, 5)

			start := time.Now()
			if _, err := sender.Write(data); err != nil {
				t.Fatal(err)
			}
			head := make([]byte, before)
			if _, err := io.ReadFull(receiver, head); err != nil {
				t.Fatal(err)
			}
			waitStats(t, p, func(s faultproxy.Stats) bool { return s.Stalls == 1 })
			// The other direction is stalled too.
			if _, err := receiver.Write(back); err != nil {
				t.Fatal(err)
			}

			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			if err := p.Settle(ctx); err != nil {
				t.Fatal(err)
			}
			if settled := time.Since(start); settled < stall {
				t.Errorf("Settle returned %v after the write, before the %v stall ended", settled, stall)
			}

			for _, r := range []struct {
				name string
				c    *net.TCPConn
				want []byte
			}{{"receiver", receiver, data[before:]}, {"sender", sender, back}} {
				got := make([]byte, len(r.want))
				if _, err := io.ReadFull(r.c, got); err != nil {
					t.Fatalf("%s: %v", r.name, err)
				}
				if !bytes.Equal(got, r.want) {
					t.Errorf("%s got different bytes than sent", r.name)
				}
			}
			if !bytes.Equal(head, data[:before]) {
				t.Errorf("receiver got different bytes before the stall")
			}
			st := p.Stats()
			if st.Stalls != 1 || st.BytesUp+st.BytesDown != int64(len(data)+len(back)) {
				t.Errorf("stats %+v, want 1 stall and %d bytes", st, len(data)+len(back))
			}
		})
	}
}

// TestSenderEndsDuringStall is the point of the package: a sender that
// resets its socket while its bytes are held in a stalled path loses them
// by default (the receiver gets none, and a reset), or has them delivered
// when the stall ends, then the reset, with WithHeld(Deliver); one that
// closes cleanly has them delivered when the stall ends, then io.EOF,
// either way.
func TestSenderEndsDuringStall(t *testing.T) {
	tests := []struct {
		name  string
		held  faultproxy.Held
		dir   faultproxy.Direction
		stall time.Duration
		reset bool // the sender resets its socket; else it closes cleanly
	}{
		{"client resets", faultproxy.Drop, faultproxy.Up, time.Hour, true},
		{"server resets", faultproxy.Drop, faultproxy.Down, time.Hour, true},
		{"client closes", faultproxy.Drop, faultproxy.Up, 200 * time.Millisecond, false},
		{"server closes", faultproxy.Drop, faultproxy.Down, 200 * time.Millisecond, false},
		{"deliver: client resets", faultproxy.Deliver, faultproxy.Up, 200 * time.Millisecond, true},
		{"deliver: server resets", faultproxy.Deliver, faultproxy.Down, 200 * time.Millisecond, true},
		{"deliver: client closes", faultproxy.Deliver, faultproxy.Up, 200 * time.Millisecond, false},
		{"deliver: server closes", faultproxy.Deliver, faultproxy.Down, 200 * time.Millisecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leakCheck(t)
			ln := newTarget(t)
			p := newProxy(t, ln.Addr().String(), faultproxy.WithHeld(tt.held))
			p.Inject(faultproxy.Fault{Kind: faultproxy.Stall, Dir: tt.dir, Stall: tt.stall})
			client, server := dial(t, p, ln)
			sender, receiver := client, server
			if tt.dir == faultproxy.Down {
				sender, receiver = server, client
			}
			data := random(20000, 6)

			received := readAsync(receiver)
			start := time.Now()
			if _, err := sender.Write(data); err != nil {
				t.Fatal(err)
			}
			waitStats(t, p, func(s faultproxy.Stats) bool { return s.Stalls == 1 })
			if tt.reset {
				sender.SetLinger(0)
			}
			sender.Close()
			got := <-received

			switch {
			case tt.reset && tt.held == faultproxy.Drop:
				if len(got.data) != 0 {
					t.Errorf("receiver got %d bytes held when the sender reset, want none", len(got.data))
				}
				checkEnd(t, "receiver", got.err, "reset")
				waitStats(t, p, func(s faultproxy.Stats) bool { return s.HeldDropped == int64(len(data)) })
				if st := p.Stats(); st.Aborts != 1 || st.Delivers != 0 || st.HeldDelivered != 0 {
					t.Errorf("stats %+v, want 1 abort and nothing delivered", st)
				}
				return
			case tt.reset:
				if !bytes.Equal(got.data, data) {
					t.Errorf("receiver got %d bytes, want the %d held when the sender reset", len(got.data), len(data))
				}
				checkEnd(t, "receiver", got.err, "reset")
				waitStats(t, p, func(s faultproxy.Stats) bool { return s.Delivers == 1 })
				if st := p.Stats(); st.Aborts != 1 || st.HeldDelivered != int64(len(data)) || st.HeldDropped != 0 {
					t.Errorf("stats %+v, want 1 abort, %d bytes delivered after it, none dropped", st, len(data))
				}
			default:
				if !bytes.Equal(got.data, data) {
					t.Errorf("receiver got %d bytes, want the %d sent before the close", len(got.data), len(data))
				}
				checkEnd(t, "receiver", got.err, "eof")
				if st := p.Stats(); st.HeldDropped != 0 || st.Aborts != 0 || st.Delivers != 0 {
					t.Errorf("stats %+v, want nothing dropped", st)
				}
			}
			if at := got.at.Sub(start); at < tt.stall {
				t.Errorf("receiver got the bytes %v after the write, within the %v stall", at, tt.stall)
			}
		})
	}
}

// TestDeliverDropsReplies: with Deliver, what the receiver sent back to a
// sender that reset is dropped, while what the sender sent is delivered.
func TestDeliverDropsReplies(t *testing.T) {
	leakCheck(t)
	ln := newTarget(t)
	p := newProxy(t, ln.Addr().String(), faultproxy.WithHeld(faultproxy.Deliver))
	p.Inject(faultproxy.Fault{Kind: faultproxy.Stall, Dir: faultproxy.Up, Stall: 300 * time.Millisecond})
	client, server := dial(t, p, ln)
	data, reply := random(5000, 8), []byte("reply held by the stall")
	if _, err := client.Write(data); err != nil {
		t.Fatal(err)
	}
	waitStats(t, p, func(s faultproxy.Stats) bool { return s.Stalls == 1 })
	received := readAsync(server)
	if _, err := server.Write(reply); err != nil { // held: the stall stops both ways
		t.Fatal(err)
	}
	client.SetLinger(0)
	client.Close()
	got := <-received
	if !bytes.Equal(got.data, data) {
		t.Errorf("server got %d bytes, want the %d held when the client reset", len(got.data), len(data))
	}
	checkEnd(t, "server", got.err, "reset")
	waitStats(t, p, func(s faultproxy.Stats) bool { return s.HeldDropped == int64(len(reply)) })
	if st := p.Stats(); st.Delivers != 1 || st.HeldDelivered != int64(len(data)) || st.BytesDown != 0 {
		t.Errorf("stats %+v: want the request delivered, the reply dropped", st)
	}
}

// TestRandomHeld: Random.Held draws, per connection, whether the bytes held
// from a sender that resets are dropped or delivered: both come up, in
// the same order for the same seed.
func TestRandomHeld(t *testing.T) {
	leakCheck(t)
	run := func(seed int64) []faultproxy.Held {
		ln := newTarget(t)
		p := newProxy(t, ln.Addr().String(), faultproxy.WithRandom(seed, faultproxy.Random{Held: [2]int{1, 1}}))
		var got []faultproxy.Held
		for i := range 12 {
			p.Inject(faultproxy.Fault{Kind: faultproxy.Stall, Dir: faultproxy.Up, Stall: 20 * time.Millisecond})
			client, server := dial(t, p, ln)
			received := readAsync(server)
			if _, err := client.Write([]byte("held")); err != nil {
				t.Fatal(err)
			}
			waitStats(t, p, func(s faultproxy.Stats) bool { return s.Stalls == int64(i+1) })
			client.SetLinger(0)
			client.Close()
			r := <-received
			checkEnd(t, "server", r.err, "reset")
			switch string(r.data) {
			case "":
				got = append(got, faultproxy.Drop)
			case "held":
				got = append(got, faultproxy.Deliver)
			default:
				t.Fatalf("server got %q", r.data)
			}
		}
		st := p.Stats()
		if st.Aborts != 12 || st.Delivers != int64(count(got, faultproxy.Deliver)) {
			t.Errorf("stats %+v for %v", st, got)
		}
		return got
	}
	a, b := run(4), run(4)
	if !slices.Equal(a, b) {
		t.Errorf("seed 4 drew %v, then %v", a, b)
	}
	if count(a, faultproxy.Drop) == 0 || count(a, faultproxy.Deliver) == 0 {
		t.Errorf("seed 4 drew %v: want both", a)
	}
}

func count[T comparable](s []T, v T) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// TestScript: scripted faults go to connections in order, one at a time
// per connection, and a fault whose connection ends first passes on.
func TestScript(t *testing.T) {
	reset := func(after int64) faultproxy.Fault {
		return faultproxy.Fault{Kind: faultproxy.Reset, Dir: faultproxy.Up, After: after}
	}
	type conn struct {
		send   int    // bytes the client sends, then it closes its side
		expect int    // bytes the server gets
		end    string // how the server's read ends
	}
	tests := []struct {
		name   string
		faults []faultproxy.Fault
		conns  []conn // opened one after the other
	}{
		{"one fault per connection, in order", []faultproxy.Fault{reset(10), reset(20)},
			[]conn{{100, 10, "reset"}, {100, 20, "reset"}, {100, 100, "eof"}}},
		{"fault passes on when its connection ends", []faultproxy.Fault{reset(100)},
			[]conn{{50, 50, "eof"}, {150, 100, "reset"}}},
		{"stall then reset on one connection",
			[]faultproxy.Fault{{Kind: faultproxy.Stall, Dir: faultproxy.Up, After: 5, Stall: 100 * time.Millisecond}, reset(5)},
			[]conn{{20, 10, "reset"}}},
		{"down fault waits for a down byte", []faultproxy.Fault{{Kind: faultproxy.Reset, Dir: faultproxy.Down}, reset(30)},
			[]conn{{100, 30, "reset"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leakCheck(t)
			ln := newTarget(t)
			p := newProxy(t, ln.Addr().String())
			for _, f := range tt.faults {
				p.Inject(f)
			}
			for i, c := range tt.conns {
				client, server := dial(t, p, ln)
				data := random(c.send, uint64(i))
				if _, err := client.Write(data); err != nil {
					t.Fatal(err)
				}
				client.CloseWrite()
				got := readAll(server)
				if !bytes.Equal(got.data, data[:c.expect]) {
					t.Errorf("conn %d: server got %d bytes, want the first %d sent", i, len(got.data), c.expect)
				}
				checkEnd(t, "server", got.err, c.end)
				server.Close()
				readAll(client)
			}
		})
	}
}

// TestIndependent: a fault on one connection leaves the others alone.
func TestIndependent(t *testing.T) {
	leakCheck(t)
	ln := newTarget(t)
	p := newProxy(t, ln.Addr().String())
	client1, server1 := dial(t, p, ln)
	client2, server2 := dial(t, p, ln)

	// The first connection stalls, the second is reset.
	p.Inject(faultproxy.Fault{Kind: faultproxy.Stall, Dir: faultproxy.Up, Stall: time.Hour})
	client1.Write([]byte("held"))
	waitStats(t, p, func(s faultproxy.Stats) bool { return s.Stalls == 1 })
	p.Inject(faultproxy.Fault{Kind: faultproxy.Reset, Dir: faultproxy.Up})
	client2.Write([]byte("lost"))
	checkEnd(t, "server 2", readAll(server2).err, "reset")

	client3, server3 := dial(t, p, ln)
	echo := []byte("through")
	client3.Write(echo)
	got := make([]byte, len(echo))
	if _, err := io.ReadFull(server3, got); err != nil || !bytes.Equal(got, echo) {
		t.Errorf("third connection: got %q, %v; want %q", got, err, echo)
	}
	if st := p.Stats(); st.Stalls != 1 || st.Resets != 1 || st.Conns != 3 {
		t.Errorf("stats %+v, want 3 conns, 1 stall, 1 reset", st)
	}
	// The first is still stalled: closing the proxy ends it.
	p.Close()
	checkEnd(t, "client 1", readAll(client1).err, "reset")
	checkEnd(t, "server 1", readAll(server1).err, "reset")
}

// TestDropAll resets every current connection, in both directions, and
// leaves later ones alone.
func TestDropAll(t *testing.T) {
	leakCheck(t)
	ln := newTarget(t)
	p := newProxy(t, ln.Addr().String())
	var ends []*net.TCPConn
	for range 2 {
		client, server := dial(t, p, ln)
		client.Write([]byte("ping"))
		if _, err := io.ReadFull(server, make([]byte, 4)); err != nil {
			t.Fatal(err)
		}
		ends = append(ends, client, server)
	}
	p.DropAll()
	for i, c := range ends {
		checkEnd(t, fmt.Sprint("end ", i), readAll(c).err, "reset")
	}
	client, server := dial(t, p, ln)
	client.Write([]byte("ping"))
	if _, err := io.ReadFull(server, make([]byte, 4)); err != nil {
		t.Fatalf("connection after DropAll: %v", err)
	}
	if st := p.Stats(); st.Drops != 2 || st.Conns != 3 {
		t.Errorf("stats %+v, want 2 drops of 3 conns", st)
	}
}

// TestCloseDuringStall: Close ends a long stall at once, dropping what it
// held and resetting both endpoints.
func TestCloseDuringStall(t *testing.T) {
	leakCheck(t)
	ln := newTarget(t)
	p := newProxy(t, ln.Addr().String())
	p.Inject(faultproxy.Fault{Kind: faultproxy.Stall, Dir: faultproxy.Up, Stall: time.Hour})
	client, server := dial(t, p, ln)
	client.Write([]byte("held"))
	waitStats(t, p, func(s faultproxy.Stats) bool { return s.Stalls == 1 })

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := p.Settle(ctx); err != context.DeadlineExceeded {
		t.Errorf("Settle during the stall: %v, want %v", err, context.DeadlineExceeded)
	}
	start := time.Now()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %v during a stall", d)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	got := readAll(server)
	if len(got.data) != 0 {
		t.Errorf("server got %q from a stall ended by Close", got.data)
	}
	checkEnd(t, "server", got.err, "reset")
	checkEnd(t, "client", readAll(client).err, "reset")
	if st := p.Stats(); st.HeldDropped != 4 {
		t.Errorf("stats %+v, want the 4 held bytes dropped", st)
	}
	if _, err := net.Dial("tcp", p.Addr()); err == nil {
		t.Error("the proxy still accepts after Close")
	}
}

// TestDialFailure: a client whose target refuses is reset.
func TestDialFailure(t *testing.T) {
	leakCheck(t)
	ln := newTarget(t)
	p := newProxy(t, ln.Addr().String())
	ln.Close() // after New, so that the proxy cannot take the port
	c, err := net.Dial("tcp", p.Addr())
	if err == nil {
		// Else the reset came before the dialer could see its connection.
		defer c.Close()
		c.SetDeadline(time.Now().Add(timeout))
		err = readAll(c).err
	}
	checkEnd(t, "client", err, "reset")
}

// sendThrough opens conns connections, one after the other, through a
// proxy in front of a sink, made with WithRandom(seed, r); each sends
// 256 KiB, in writes of 8 KiB, unless the proxy ends it first. It returns
// the proxy's stats once it has settled.
func sendThrough(t *testing.T, seed int64, r faultproxy.Random, conns int) faultproxy.Stats {
	t.Helper()
	s := newSink(t)
	p := newProxy(t, s.ln.Addr().String(), faultproxy.WithRandom(seed, r))
	data := random(256<<10, 7)
	for range conns {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(timeout))
		for off := 0; off < len(data); off += 8 << 10 {
			if _, err := c.Write(data[off : off+8<<10]); err != nil {
				break
			}
		}
		c.(*net.TCPConn).CloseWrite()
		readAll(c) // the sink closes once it has read everything, or the proxy ends the connection
		c.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := p.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	p.Close()
	return p.Stats()
}

// TestRandom: random faults fire, and data still flows between them; the
// same seed and the same bytes meet the same faults.
func TestRandom(t *testing.T) {
	leakCheck(t)
	r := faultproxy.Random{MeanBytes: 64 << 10, StallMin: time.Millisecond, StallMax: 5 * time.Millisecond}
	st := sendThrough(t, 1, r, 10)
	if st.Conns != 10 || st.Resets+st.Cuts == 0 || st.Stalls == 0 || st.BytesUp == 0 {
		t.Errorf("stats %+v, want 10 conns, resets or cuts, stalls and bytes", st)
	}
	a, b := sendThrough(t, 2, r, 1), sendThrough(t, 2, r, 1)
	a.HeldDropped, b.HeldDropped = 0, 0 // how far the proxy read ahead depends on timing
	if a != b {
		t.Errorf("one connection with the same seed and bytes: stats %+v, then %+v", a, b)
	}
}

// TestRandomWeights: Random.Weights picks the kinds of random faults; a
// kind of weight zero never fires.
func TestRandomWeights(t *testing.T) {
	tests := []struct {
		weights [3]int
		want    func(faultproxy.Stats) bool
	}{
		{[3]int{1, 0, 0}, func(s faultproxy.Stats) bool { return s.Resets == 1 && s.Cuts == 0 && s.Stalls == 0 }},
		{[3]int{0, 1, 0}, func(s faultproxy.Stats) bool { return s.Resets == 0 && s.Cuts == 1 && s.Stalls == 0 }},
		{[3]int{0, 0, 1}, func(s faultproxy.Stats) bool {
			return s.Resets == 0 && s.Cuts == 0 && s.Stalls > 1 && s.BytesUp == 256<<10
		}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.weights), func(t *testing.T) {
			leakCheck(t)
			r := faultproxy.Random{MeanBytes: 32 << 10, Weights: tt.weights, StallMin: time.Millisecond, StallMax: 2 * time.Millisecond}
			if st := sendThrough(t, 3, r, 1); !tt.want(st) {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

// TestRandomDrops: WithRandom's DropMin drops every connection now and
// then.
func TestRandomDrops(t *testing.T) {
	leakCheck(t)
	ln := newTarget(t)
	p := newProxy(t, ln.Addr().String(), faultproxy.WithRandom(1, faultproxy.Random{DropMin: 20 * time.Millisecond, DropMax: 40 * time.Millisecond}))
	client, server := dial(t, p, ln)
	checkEnd(t, "client", readAll(client).err, "reset")
	checkEnd(t, "server", readAll(server).err, "reset")
	if st := p.Stats(); st.Drops < 1 {
		t.Errorf("stats %+v, want a drop", st)
	}
}

// TestMisusePanics: invalid faults and options panic.
func TestMisusePanics(t *testing.T) {
	tests := []struct {
		name string
		f    func(p *faultproxy.Proxy)
	}{
		{"negative After", func(p *faultproxy.Proxy) { p.Inject(faultproxy.Fault{After: -1}) }},
		{"stall without duration", func(p *faultproxy.Proxy) { p.Inject(faultproxy.Fault{Kind: faultproxy.Stall}) }},
		{"reset with duration", func(p *faultproxy.Proxy) { p.Inject(faultproxy.Fault{Stall: time.Second}) }},
		{"bad kind", func(p *faultproxy.Proxy) { p.Inject(faultproxy.Fault{Kind: 7}) }},
		{"bad direction", func(p *faultproxy.Proxy) { p.Inject(faultproxy.Fault{Dir: 2}) }},
		{"negative weight", func(*faultproxy.Proxy) {
			faultproxy.New("127.0.0.1:1", faultproxy.WithRandom(1, faultproxy.Random{Weights: [3]int{-1, 1, 1}}))
		}},
		{"random stalls without duration", func(*faultproxy.Proxy) {
			faultproxy.New("127.0.0.1:1", faultproxy.WithRandom(1, faultproxy.Random{MeanBytes: 100}))
		}},
		{"bad held", func(*faultproxy.Proxy) { faultproxy.New("127.0.0.1:1", faultproxy.WithHeld(2)) }},
		{"negative held weight", func(*faultproxy.Proxy) {
			faultproxy.New("127.0.0.1:1", faultproxy.WithRandom(1, faultproxy.Random{Held: [2]int{-1, 1}}))
		}},
		{"negative mean", func(*faultproxy.Proxy) {
			faultproxy.New("127.0.0.1:1", faultproxy.WithRandom(1, faultproxy.Random{MeanBytes: -1}))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leakCheck(t)
			p := newProxy(t, "127.0.0.1:1")
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			tt.f(p)
		})
	}
}
