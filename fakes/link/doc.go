// Package link simulates the network path between a client and a server:
// a round-trip time and a bandwidth per connection, put in front of a
// server's listener, so tests and benchmarks on loopback see a path like the
// one from a user to GCS, 1 to 100 ms away.
//
// Every connection accepted through [Listen] (or wrapped by [Wrap], on
// either side) delays the bytes each way by half the RTT, pipelined like a
// real path: a window of bytes is in flight at once, not one write per round
// trip. Each direction is paced at the bandwidth, like a bottleneck link: a
// segment departs when the previous one has, plus its length over the
// bandwidth (departure = max(now, previous departure) + len/bandwidth), and
// arrives half the RTT after it departs.
//
// The link holds a bounded number of bytes per direction ([Config.Buffer]:
// twice the bandwidth-delay product, at least 4 MiB, at most 256 MiB, and
// 64 MiB without a bandwidth limit), so memory stays bounded and a reader
// that stops reading slows the writer down, as TCP's window does; HTTP/2's
// and gRPC's flow control sit on top, as on a real path.
//
// A connection behaves as a net.Conn does: Read returns what has arrived
// (partial reads), and io.EOF once the peer has closed and everything it
// sent has been read; Write returns once its bytes are queued on the link;
// deadlines end pending and later calls; Close ends pending calls at once.
// As with TCP, bytes written before Close still reach the peer (for up to
// a second after Close, see [Wrap]), and CloseWrite half-closes after the
// bytes written before it.
//
// It does not simulate loss, reordering or jitter; the bandwidth is per
// connection and direction, not a bottleneck shared by all connections;
// and there is no slow start: a connection sends at the full bandwidth from
// its first byte. A front end's cap on the concurrent streams of one
// connection is the gRPC server's (fakes.WithMaxStreams), and so are its
// flow-control windows ([ServerWindows]).
package link
