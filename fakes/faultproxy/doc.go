// Package faultproxy is a TCP proxy on loopback that injects network
// faults into the connections it forwards, so that tests can check that a
// client tells the truth when the network fails: that it reports an
// upload as done only when the server has it, and as failed only when the
// server may not.
//
// A [Proxy] listens on 127.0.0.1 and forwards each connection it accepts
// to one target, such as the fake GCS's gRPC port or its JSON port; the
// client dials [Proxy.Addr] in place of the target. Connections are
// independent: a fault fires on one connection and affects no other
// ([Proxy.DropAll] aside). Faults are scripted with [Proxy.Inject], which
// places one after an exact number of bytes of one direction of the next
// connection, or drawn at random ([WithRandom]), or both. [Proxy.Stats]
// counts what fired, and [Proxy.Settle] waits until the proxy holds no
// bytes, before a test looks at what the server received.
//
// # Faults
//
// Each fault models one thing a real path does:
//
//   - [Reset]: a middlebox or a host that aborts the connection. Both
//     endpoints receive an RST (the proxy closes both sockets with
//     SO_LINGER 0): their next read or write fails with a connection
//     reset. The bytes forwarded before the fault arrive (the proxy waits
//     up to a second for the endpoints' TCP to acknowledge them, as an RST
//     would otherwise discard them); those the proxy held are dropped.
//   - [Cut]: a connection closed cleanly from the middle, as by a load
//     balancer. Both endpoints receive a FIN after the bytes forwarded
//     before the fault, and read io.EOF; the bytes the proxy held are
//     dropped. An endpoint that keeps writing may then get a reset, as
//     from any host that closed its socket.
//   - [Stall]: a path that stops passing packets for a while, in both
//     directions of the connection. The proxy keeps reading both sockets,
//     so it notices at once when an endpoint closes, but holds what it
//     reads; when the stall ends it delivers the held bytes in order and
//     forwards as usual again. What ends a stall early decides the fate of
//     the held bytes. A sender that closes cleanly (io.EOF) has them
//     delivered when the stall ends, followed by a FIN (CloseWrite): a
//     normal close still delivers what was sent. A sender that resets its
//     socket (a read of it, or a write to it, fails with an error other
//     than io.EOF) has them dropped or delivered, as the proxy's [Held]
//     says (see Held bytes below).
//   - [Proxy.DropAll]: a middlebox that loses its connection table, such
//     as a NAT rebooting: every current connection is reset, both ways.
//
// # Held bytes
//
// The proxy holds bytes it has read from one endpoint and not yet written
// to the other: up to 256 KiB per direction read ahead while the path
// flows (the bytes in flight on a path), and all it read during a stall.
// A Reset, a Cut or DropAll drops them. When an endpoint (the sender)
// resets its socket, two real paths differ, and [WithHeld] picks one:
//
//   - [Drop], the default: the bytes are lost, as bytes still
//     unacknowledged in the sender's own TCP retransmission queue are,
//     and the other endpoint is reset at once. A request stuck in a
//     stalled path and abandoned never lands.
//   - [Deliver]: the bytes are delivered all the same, in order, once
//     the path flows (when a stall ends), with any the sender's kernel
//     had sent before its RST, and then the other endpoint is reset. So
//     does a network queue (the RST travels behind the data) or a front
//     end that has already read the request (Google's front ends
//     terminate the client's connection and forward each request as its
//     own call): a client's reset does not withdraw what the path already
//     took. The other endpoint reads every byte, then the reset, which
//     Linux reports only after the bytes received before it. What it
//     sends back meanwhile is dropped.
//
// [Random].Held draws one of the two per connection, so a random run
// meets both. [Stats.HeldDropped] counts the bytes dropped;
// [Stats.Delivers] the senders' resets whose bytes were delivered, and
// [Stats.HeldDelivered] those bytes.
//
// A fault of direction d counts the bytes of d only, and fires in the
// stream of d once After of them have been forwarded: the endpoint
// downstream receives exactly those bytes, then the fault. A fault fires
// for both directions of its connection: a Stall counted on the bytes up
// also stops the bytes down.
//
// # Costs and limits
//
// Each connection costs four goroutines and one copy of every byte. A
// direction holds at most 256 KiB while it flows, and 64 MiB while its
// connection is stalled; past that the proxy stops reading its source, as
// a full TCP window would stop the sender. Without faults, one connection
// through the proxy carried 1.3 GB/s on a two-core machine where loopback
// alone carried 2.6 GB/s (BenchmarkPassThrough).
//
// The exactness of Reset and Cut (the downstream endpoint receives every
// byte forwarded before the fault) relies on Linux's SIOCOUTQ; elsewhere
// a few of those bytes may be lost to the RST. A Reset or Cut whose peer
// does not read for a second fires anyway, losing what it had not read.
// The proxy does not model latency, bandwidth, loss or reordering. Package
// link (fakes/link) models delay and bandwidth; to have both, put the link
// on the server's listener and the proxy in front of that server. Package
// frontend (fakes/frontend) puts a real L7 front end, HAProxy, behind the
// proxy: client, proxy, front end, server, as on the path to GCS, where
// a client's reset ends only its own connection to the front end.
package faultproxy
