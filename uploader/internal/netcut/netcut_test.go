package netcut_test

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/objup/objup/uploader/internal/netcut"
)

// accept returns a listener on loopback and a channel of the connections
// it accepts.
func accept(t *testing.T) (net.Listener, <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan net.Conn, 4)
	go func() {
		defer close(ch)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			ch <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for c := range ch {
			c.Close()
		}
	})
	return ln, ch
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestCloseResets: a connection of a Dialer closes with a reset, whoever
// closes it, so the peer reads ECONNRESET, not io.EOF; Cut finds it by its
// local address, and CutSilent by its silence.
func TestCloseResets(t *testing.T) {
	for _, tc := range []struct {
		name string
		cut  func(d *netcut.Dialer, c net.Conn) bool
	}{
		{"Close", func(_ *netcut.Dialer, c net.Conn) bool { return c.Close() == nil }},
		{"Cut", func(d *netcut.Dialer, c net.Conn) bool { return d.Cut(c.LocalAddr()) }},
		{"CutSilent", func(d *netcut.Dialer, c net.Conn) bool { return d.CutSilent(0) == 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, conns := accept(t)
			var d netcut.Dialer
			c, err := d.DialContext(context.Background(), "tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			peer := <-conns
			if n := d.Open(); n != 1 {
				t.Fatalf("Open = %d, want 1", n)
			}
			if !tc.cut(&d, c) {
				t.Fatal("the connection was not cut")
			}
			peer.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, err = peer.Read(make([]byte, 1))
			if !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("the peer read %v, want a connection reset", err)
			}
			if n := d.Open(); n != 0 {
				t.Fatalf("Open = %d after the cut, want 0", n)
			}
			if d.Cut(c.LocalAddr()) {
				t.Fatal("Cut found a closed connection")
			}
		})
	}
}

// TestCutSilentSparesTheLive: CutSilent resets only the connections that
// received nothing for the given time.
func TestCutSilentSparesTheLive(t *testing.T) {
	ln, conns := accept(t)
	var d netcut.Dialer
	quiet, err := d.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer quiet.Close()
	<-conns
	live, err := d.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	livePeer := <-conns
	// Both have been quiet since t0; then the live one hears a byte, a
	// margin later. CutSilent with the quiet time less half the margin
	// cuts the quiet connection alone.
	const margin = 200 * time.Millisecond
	t0 := time.Now()
	time.Sleep(margin)
	if _, err := livePeer.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(live, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	if n := d.CutSilent(time.Since(t0) - margin/2); n != 1 {
		t.Fatalf("CutSilent reset %d connections, want the quiet one", n)
	}
	if _, err := live.Write([]byte("y")); err != nil {
		t.Fatalf("the live connection was cut: %v", err)
	}
	if d.Cuts() != 1 {
		t.Fatalf("Cuts = %d, want 1", d.Cuts())
	}
}

// TestNilDialer: a nil Dialer cuts nothing (a client whose connections
// the caller dialled).
func TestNilDialer(t *testing.T) {
	var d *netcut.Dialer
	if d.Cut(&net.TCPAddr{}) || d.CutSilent(0) != 0 {
		t.Fatal("a nil Dialer cut something")
	}
}
