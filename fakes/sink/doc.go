// Package sink is a storage v2 gRPC server for benchmarks: it checks every
// write as the fake GCS (package fakes) does, with the same validator, and
// drops the bytes once checked, so that a benchmark measures the client,
// not the server. fakes/cmd/gcssink runs it as a program. See [Server].
package sink
