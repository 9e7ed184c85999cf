package link_test

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/objup/objup/fakes/link"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// pair returns the two ends of a loopback TCP connection whose server end
// is behind the link.
func pair(t *testing.T, cfg link.Config) (client, server net.Conn) {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := link.Listen(raw, cfg)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	client, err = net.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// echo copies what server reads back to it until the connection ends.
func echo(server net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			if _, werr := server.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// TestRoundTrip: a small message echoed through the link takes the RTT,
// within 10%: the minimum over several ping-pongs, since a loaded machine
// can only add to it.
func TestRoundTrip(t *testing.T) {
	for _, rtt := range []time.Duration{20 * time.Millisecond, 50 * time.Millisecond} {
		t.Run(rtt.String(), func(t *testing.T) {
			client, server := pair(t, link.Config{RTT: rtt})
			go echo(server)
			best := time.Hour
			buf := make([]byte, 8)
			for range 8 {
				start := time.Now()
				if _, err := client.Write([]byte("ping1234")); err != nil {
					t.Fatal(err)
				}
				if _, err := io.ReadFull(client, buf); err != nil {
					t.Fatal(err)
				}
				best = min(best, time.Since(start))
			}
			t.Logf("RTT %v: best round trip %v", rtt, best)
			if best < rtt || best > rtt*11/10 {
				t.Fatalf("round trip %v through a link of RTT %v: want within 10%%", best, rtt)
			}
		})
	}
}

// TestBandwidth: a transfer through a link of 20 MB/s runs at 20 MB/s,
// within 10% (the best of three, since a loaded machine can only slow it).
func TestBandwidth(t *testing.T) {
	const bw = 20e6
	const size = 4 << 20
	best := 0.0
	for range 3 {
		client, server := pair(t, link.Config{RTT: 2 * time.Millisecond, Bandwidth: bw})
		data := make([]byte, size)
		done := make(chan error, 1)
		go func() {
			_, err := server.Write(data)
			if err == nil {
				err = server.(interface{ CloseWrite() error }).CloseWrite()
			}
			done <- err
		}()
		start := time.Now()
		n, err := io.Copy(io.Discard, client)
		elapsed := time.Since(start)
		if err != nil || n != size {
			t.Fatalf("received %d bytes, %v", n, err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		best = max(best, float64(n)/elapsed.Seconds())
	}
	t.Logf("bandwidth %.1f MB/s through a link of %.0f MB/s", best/1e6, bw/1e6)
	if best > bw*1.1 || best < bw*0.9 {
		t.Fatalf("%.1f MB/s through a link of %.0f MB/s: want within 10%%", best/1e6, bw/1e6)
	}
}

// TestBytesPassUnchanged: both directions at once, byte-exact, with a
// delay and a bandwidth, and a zero Config leaves the listener as it is.
func TestBytesPassUnchanged(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if ln := link.Listen(raw, link.Config{}); ln != raw {
		t.Fatal("a zero Config wrapped the listener")
	}
	raw.Close()

	client, server := pair(t, link.Config{RTT: 5 * time.Millisecond, Bandwidth: 200e6})
	up := make([]byte, 3<<20+17)
	down := make([]byte, 2<<20+5)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range up {
		up[i] = byte(r.Uint32())
	}
	for i := range down {
		down[i] = byte(r.Uint32())
	}
	var wg sync.WaitGroup
	var gotUp, gotDown []byte
	var errUp, errDown error
	wg.Go(func() { gotUp, errUp = io.ReadAll(io.LimitReader(server, int64(len(up)))) })
	wg.Go(func() { gotDown, errDown = io.ReadAll(io.LimitReader(client, int64(len(down)))) })
	wg.Go(func() { client.Write(up) })
	wg.Go(func() { server.Write(down) })
	wg.Wait()
	if errUp != nil || errDown != nil || !bytes.Equal(gotUp, up) || !bytes.Equal(gotDown, down) {
		t.Fatalf("up %v (%d bytes, equal %v), down %v (%d bytes, equal %v)",
			errUp, len(gotUp), bytes.Equal(gotUp, up), errDown, len(gotDown), bytes.Equal(gotDown, down))
	}
}

// TestCloseAndDeadlines: a read waits past nothing it should: the peer's
// close is an io.EOF after the data, a passed deadline ends a blocked read
// and a later one lets reads go on, and Close ends a blocked read.
func TestCloseAndDeadlines(t *testing.T) {
	client, server := pair(t, link.Config{RTT: 10 * time.Millisecond})
	if _, err := client.Write([]byte("last words")); err != nil {
		t.Fatal(err)
	}
	client.Close()
	got, err := io.ReadAll(server)
	if err != nil || string(got) != "last words" {
		t.Fatalf("read %q, %v; want the data, then io.EOF", got, err)
	}

	client, server = pair(t, link.Config{RTT: 10 * time.Millisecond})
	if err := server.SetReadDeadline(time.Now().Add(30 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past its deadline: %v", err)
	}
	server.SetReadDeadline(time.Time{})
	client.Write([]byte("x"))
	if _, err := io.ReadFull(server, make([]byte, 1)); err != nil {
		t.Fatalf("read after the deadline was cleared: %v", err)
	}
	// A deadline set in the past wakes a read already blocked, as net/http
	// does to abort its background read.
	done := make(chan error, 1)
	go func() { _, err := server.Read(make([]byte, 1)); done <- err }()
	time.Sleep(10 * time.Millisecond) // the read is blocked by then, or blocks right after
	server.SetReadDeadline(time.Unix(1, 0))
	if err := <-done; !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("blocked read after a past deadline: %v", err)
	}
	server.SetReadDeadline(time.Time{})
	go func() { _, err := server.Read(make([]byte, 1)); done <- err }()
	server.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("blocked read after Close: %v", err)
	}
}

// TestBackPressure: a writer to a peer that never reads blocks once the
// link's buffer and the sockets' are full, instead of buffering without
// bound; Close then ends the write.
func TestBackPressure(t *testing.T) {
	_, server := pair(t, link.Config{RTT: 2 * time.Millisecond, Bandwidth: 1e9})
	wrote := make(chan int, 1)
	go func() {
		n, _ := server.Write(make([]byte, 1<<30))
		wrote <- n
	}()
	select {
	case n := <-wrote:
		t.Fatalf("a 1 GiB write to a peer that never reads returned after %d bytes", n)
	case <-time.After(500 * time.Millisecond):
	}
	server.Close()
	if n := <-wrote; n >= 1<<30 {
		t.Fatalf("the write took all %d bytes", n)
	}
}

func TestParseBandwidth(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"100MB/s", 100e6, true},
		{"1.5GB/s", 1.5e9, true},
		{"64KiB/s", 64 << 10, true},
		{"10MiB/s", 10 << 20, true},
		{"512B/s", 512, true},
		{"0", 0, true},
		{"100", 0, false},
		{"-5MB/s", 0, false},
		{"fast", 0, false},
	} {
		got, err := link.ParseBandwidth(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseBandwidth(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
