// Package fakes is an in-process fake of Google Cloud Storage for tests,
// examples and benchmarks.
//
// [New] starts two servers on loopback that share one object store:
//
//   - fake-gcs-server (github.com/fsouza/fake-gcs-server/fakestorage), in
//     memory, for the JSON and XML APIs over HTTP ([Server.HTTPURL]);
//   - a storage v2 gRPC server ([Server.GRPCAddr]) that speaks the real
//     google.storage.v2.Storage method names.
//
// An object written over gRPC is stored in fake-gcs-server when the write is
// finalized, so the JSON API sees it at once, and an object written over HTTP
// can be read, listed and deleted over gRPC.
//
// # gRPC methods
//
// WriteObject, BidiWriteObject, StartResumableWrite, QueryWriteStatus,
// ReadObject, GetObject, ListObjects and DeleteObject. The server checks what
// the service checks, and a few things more strictly:
//
//   - the CRC32C of each message's content, when the message carries one, and
//     the whole-object CRC32C and MD5 given in object_checksums at
//     finish_write: a mismatch fails with codes.DataLoss and stores nothing;
//   - write offsets: every message with data must start exactly where the
//     data received so far ends (the service tolerates overlaps; the fake
//     reports a gap or an overlap as codes.InvalidArgument), and a
//     finish_write must end there too;
//   - object_size, when the spec sets it; at most 2 MiB of content per message;
//   - preconditions (if_generation_match, 0 meaning "must not exist",
//     if_generation_not_match, if_metageneration_match and _not_match):
//     codes.FailedPrecondition. Objects keep metageneration 1;
//   - object names as GCS validates them, and "projects/_/buckets/NAME"
//     bucket names: codes.InvalidArgument; unknown buckets: codes.NotFound;
//   - appendable objects and customer-supplied encryption keys:
//     codes.Unimplemented.
//
// A write with write_object_spec in its first message is a one-shot write:
// its data lives only on that stream and is discarded unless finish_write
// arrives. A write whose first message names an upload_id (from
// StartResumableWrite) appends to a resumable session, which keeps every byte
// it accepted until the session is finalized; QueryWriteStatus reports the
// persisted size, or the object once finalized. BidiWriteObject answers a
// message with state_lookup, and a client's half-close of a resumable stream,
// with the persisted size, and finish_write with the object, after which the
// stream ends.
//
// # Request log and faults
//
// Every gRPC call is recorded with its method, the tenant (the last
// x-scope-orgid metadata value), the bucket and object when known, and its
// final status code: see [Server.Calls]. Tests inject failures with
// [Server.FailCall], [Server.BreakStream], [Server.CorruptNext] and
// [Server.Delay], and remove them with [Server.ClearFaults].
//
// # Cost
//
// The fake sits next to the clients it serves in benchmarks, so it keeps its
// own work small: an upload keeps each message's content as gRPC decoded it
// (no copy), checks each message's CRC32C once and derives the object's
// CRC32C by combining them, and the store copies the content once, into
// fake-gcs-server. Two costs remain that the fake cannot avoid:
//
//   - MD5, which GCS reports and fake-gcs-server would compute anyway: at
//     roughly 0.5 to 1 GB/s it dominates large writes;
//   - fake-gcs-server's memory backend scans every object of the bucket, with
//     a fmt.Sprintf per object, on each write and read of one object: a 1 KiB
//     write costs about 0.1 ms in an empty bucket and 15 ms in one of 10,000
//     objects. Benchmarks should overwrite a bounded set of names, or delete
//     what they wrote.
//
// The request log grows by one small record per call; [Server.ResetCalls]
// empties it. Resumable sessions that are never finalized keep their data
// until Close; finalized ones keep only their object, and the server
// remembers the last 4096 of them.
//
// # In tests
//
// [NewTest] starts a server and closes it when the test ends. It takes the
// small [TB] interface rather than testing.TB, so programs that import fakes
// (such as fakes/cmd/fakegcs) do not link the testing package.
package fakes
