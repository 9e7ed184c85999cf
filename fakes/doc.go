// Package fakes is an in-process fake of Google Cloud Storage for tests,
// examples and benchmarks.
//
// [New] starts two servers on loopback that share one object store:
//
//   - a storage v2 gRPC server ([Server.GRPCAddr]) that speaks the real
//     google.storage.v2.Storage method names;
//   - a JSON API server over HTTP ([Server.HTTPURL]), which also serves
//     path-style reads (GET /BUCKET/OBJECT) as the official Go client sends
//     them, and the XML API's uploads and listings.
//
// With [WithHTTPSAddr] the JSON API is also served over HTTPS
// ([Server.HTTPSURL]), with a certificate the server makes
// ([Server.CertPEM]), for clients that speak only HTTPS: gsutil's JSON
// mode. An object written over one API is at once visible over the other.
// The store is in memory, or on disk with [WithDataDir] (or the
// environment variable [DataEnv]), where a server started again on the
// same directory finds every write it acknowledged.
//
// Options model more of GCS: [WithZonalBucket] (appendable writes only),
// [WithCapacity] (a bucket's write rate), [WithCommitDelay] (slow
// commits), [WithCredential] (callers held to a role), [WithLink] (a
// network path 1 to 100 ms long) and [WithMaxStreams] (a front end's cap
// on the streams of a connection).
//
// # In tests
//
// [NewTest] starts a server and closes it when the test ends. It takes the
// small [TB] interface rather than testing.TB, so programs that import fakes
// (such as fakes/cmd/fakegcs) do not link the testing package. Package fakes
// does not import fake-gcs-server or the official storage module: programs
// that use it stay small.
//
// # Inspection
//
// [Server.Object], [Server.ListObjects] and [Server.PutObject] inspect and
// seed the store directly, without requests. [Server.Calls] is the log of
// the last calls, each with its method, tenant, bucket, object and status
// code; [Server.CallCounts] counts every call, [Server.Usage] the objects
// and bytes of each tenant, [Server.Sessions] the resumable sessions,
// [Server.CapacityStats] the writes admitted and refused, and, with
// [WithMaxStreams], [Server.Conns] the calls of each gRPC connection. GET
// /_objup/stats on the HTTP server serves the counts, the usage, the
// sessions and the capacity's counts as JSON.
//
// # Faults
//
// [Server.FailCall], [Server.BreakStream], [Server.CorruptNext],
// [Server.Delay], [Server.LoseAnswer] and [Server.RedirectAppend] inject
// failures into calls, and [Server.ClearFaults] removes them. The HTTP
// server also serves the retry test API of Google's storage testbench
// (POST /retry_test), which the official clients' retry conformance
// suites drive.
//
// # The fakegcs command
//
// fakes/cmd/fakegcs runs the fake as a standalone server, with flags for
// the options above, and prints its addresses on standard output:
//
//	$ go run github.com/objup/objup/fakes/cmd/fakegcs -bucket demo
//	grpc 127.0.0.1:PORT
//	http http://127.0.0.1:PORT
//
// # Specification
//
// What each gRPC, JSON and XML method does and checks, resumable sessions
// and appendable objects, the store on disk, the fault rules, roles, the
// write capacity, the retry test API and the cost of the fake's own work
// are specified in the repository's docs/fake directory (docs/fake/README.md
// is its index).
//
// # Layers
//
// This package is the fake's face. Below it, internal/grpcfront and
// internal/httpfront (JSON and XML) read their API's requests and write its
// answers, never importing each other; internal/calls is the per-call
// layer (request log, fault rules, a credential's role, retry tests); and
// internal/core is what GCS does whichever wire carried the request, over
// the store (internal/store). TestLayers keeps the directions.
package fakes
