package faultproxy_test

import (
	"io"
	"net"
	"sync"
	"testing"

	"github.com/objup/objup/fakes/faultproxy"
)

// BenchmarkPassThrough sends 4 MiB to a server and waits for its one-byte
// answer, over one connection: straight over loopback (the baseline) and
// through a proxy without faults.
func BenchmarkPassThrough(b *testing.B) {
	const size = 4 << 20
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				for {
					if _, err := io.CopyN(io.Discard, c, size); err != nil {
						return
					}
					if _, err := c.Write([]byte{1}); err != nil {
						return
					}
				}
			})
		}
	})
	defer func() { ln.Close(); wg.Wait() }()

	p, err := faultproxy.New(ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()

	data := random(size, 1)
	for _, bb := range []struct{ name, addr string }{
		{"direct", ln.Addr().String()},
		{"proxy", p.Addr()},
	} {
		b.Run(bb.name, func(b *testing.B) {
			c, err := net.Dial("tcp", bb.addr)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			ack := make([]byte, 1)
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Write(data); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, ack); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
