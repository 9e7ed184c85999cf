// Package xfer is the seam between an upload's logic and the API that
// carries it: the read-only Request a transport reads (its Target, spec
// and checksums), the chunks it sends and their Lifetime (references that
// give a buffer back once nothing reads it), and the interfaces a
// transport implements (Transport, Stream) and reports to (StreamSink).
// Its one job is to define that seam: it imports no transport and no
// upload mode, and the transports import nothing of the uploader but it.
package xfer
