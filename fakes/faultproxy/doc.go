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
//     the held bytes, as with TCP, where they would sit unacknowledged in
//     the sender's retransmission queue:
//     a sender that resets its socket (a read of it fails with an error
//     other than io.EOF) loses them: they are never delivered, and the
//     other endpoint is reset too. A request stuck in a stalled path and
//     abandoned never lands. A sender that closes cleanly (io.EOF) has
//     them delivered when the stall ends, followed by a FIN (CloseWrite):
//     a normal close still delivers what was sent.
//   - [Proxy.DropAll]: a middlebox that loses its connection table, such
//     as a NAT rebooting: every current connection is reset, both ways.
//
// The rule that an endpoint's reset drops what the proxy holds from it
// holds outside stalls too: the proxy reads ahead of what it has written
// by up to 256 KiB per direction, the bytes in flight on a path, and a
// reset, a cut or an endpoint's reset drops them. [Stats.HeldDropped]
// counts them.
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
// on the server's listener and the proxy in front of that server.
package faultproxy
