// Package wire holds objup's subset of the GCS gRPC API (google.storage.v2): the
// generated message types, hand-written method and stream tables carrying the real
// method names, and Codec, a gRPC codec that sends a write request's payload without
// copying it.
//
// The messages live under the proto package objup.wire.v2 but keep the public field
// numbers, so their bytes are those of google.storage.v2 messages: a server or client
// built from the official definitions reads them unchanged. Only the method names
// travel on the wire, and those are the real ones, e.g.
// /google.storage.v2.Storage/BidiWriteObject.
//
// The package is internal: its types are machinery for the uploader and the fake
// server, not API.
package wire
