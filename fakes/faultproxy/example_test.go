package faultproxy_test

import (
	"fmt"
	"io"
	"net"
	"time"

	"github.com/objup/objup/fakes/faultproxy"
)

// A stall of 100 ms on the first byte a client sends: the server's reply
// arrives after it, and nothing is lost.
func ExampleProxy_Inject() {
	// A server that answers "pong" to a "ping", then closes.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if _, err := io.ReadFull(c, make([]byte, 4)); err == nil {
			c.Write([]byte("pong"))
		}
	}()

	p, err := faultproxy.New(ln.Addr().String())
	if err != nil {
		panic(err)
	}
	defer p.Close()
	p.Inject(faultproxy.Fault{Kind: faultproxy.Stall, Dir: faultproxy.Up, Stall: 100 * time.Millisecond})

	c, err := net.Dial("tcp", p.Addr()) // in place of ln's address
	if err != nil {
		panic(err)
	}
	defer c.Close()
	start := time.Now()
	c.Write([]byte("ping"))
	reply, err := io.ReadAll(c)
	fmt.Println(string(reply), err, time.Since(start) >= 100*time.Millisecond, p.Stats().Stalls)
	// Output: pong <nil> true 1
}
