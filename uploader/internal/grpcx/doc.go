// Package grpcx is the transport of uploads over storage v2 gRPC: a
// one-shot WriteObject, resumable sessions (StartResumableWrite,
// QueryWriteStatus, BidiWriteObject, CancelResumableWrite) and appendable
// objects' streams, over a pool of connections. Its one job is to carry
// one attempt of each call and report what came back (package xfer's
// Transport and Stream); it knows nothing of the upload above it.
package grpcx
