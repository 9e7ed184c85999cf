// Package fakes is an in-process fake of Google Cloud Storage for tests,
// examples and benchmarks.
//
// [New] starts two servers on loopback that share one object store:
//
//   - a storage v2 gRPC server ([Server.GRPCAddr]) that speaks the real
//     google.storage.v2.Storage method names;
//   - a JSON API server over HTTP ([Server.HTTPURL]), which also serves
//     path-style reads (GET /BUCKET/OBJECT) as the official Go client sends
//     them.
//
// With [WithHTTPSAddr] the JSON API is also served over HTTPS
// ([Server.HTTPSURL]), with a certificate the server makes
// ([Server.CertPEM]), for clients that speak only HTTPS: gsutil's JSON
// mode. gcloud storage and gsutil both work against the fake (cp of files,
// directories and large files through resumable and parallel composite
// uploads, ls, cat, rm): conformance/gcloud.sh runs their sessions, and
// TestToolSessions replays the requests they send.
//
// An object written over one API is at once visible over the other.
//
// # The store
//
// The store is the fake's own (package fakes/internal/store), sealed: both
// fronts write through its methods only, and a write message is checked by
// one validator (fakes/internal/writes) that the sink shares. Per bucket it
// keeps a map of the live objects by name, for gets and overwrites, and an
// ordered index of every stored generation (a B-tree,
// github.com/google/btree), for listings by prefix, delimiter, offsets and
// page token. So every operation costs the same with a thousand objects
// stored as with a million: BenchmarkScale measures a 1 KiB create, over
// gRPC or JSON, and a get at 1,000 and at 1,000,000 objects, and finds the
// same time and allocations within the noise of a loopback round trip. A
// listing page costs the entries it returns plus one index seek per prefix
// the delimiter rolls up.
//
// Each bucket has its own lock, held only to check preconditions and update
// the map and the index: content is received, checksummed (CRC32C and MD5,
// once, as it arrives) and kept before a write takes the lock, and read
// after a read released it. A stored object is never modified: a metadata
// update stores a copy with the same content, so a reader needs no lock.
// Generations are unique and increasing across the store (the time in
// microseconds, as GCS); a metadata update bumps the metageneration. A
// bucket created with versioning (buckets.insert with versioning.enabled)
// keeps overwritten and deleted objects as noncurrent generations.
//
// An object's content is kept as it arrived, in parts (a gRPC message's
// content, or up to 2 MiB of an HTTP body), without being joined. A stored
// 1 KiB object takes about 1.4 KB of heap in all (BenchmarkHeapPerObject:
// the content plus about 400 bytes of record, name, map and index entry).
// [Server.Object], [Server.ListObjects] and [Server.PutObject] inspect and
// seed the store directly, without requests.
//
// # The store on disk
//
// With [WithDataDir] (fakegcs -data DIR) the store keeps everything on disk
// instead, in a Pebble database (github.com/cockroachdb/pebble/v2) and, for
// content over 64 KiB and appendable objects, in files of their own: no
// object is kept in memory, so the process's memory stays flat however
// many objects it holds, a get is one Pebble seek and a listing page a
// range scan, in the order of the keys (bucket, name, generation) that is
// GCS's listing order. Every write is answered only once synced (the
// content file fsynced, then the Pebble batch that names it committed with
// its WAL synced, concurrent writes sharing a sync), so a server started
// on the directory after a kill -9 finds every write it acknowledged;
// resumable sessions keep their record and their bytes (synced before the
// request that carried them is answered), and appendable objects their
// persisted bytes, to be taken over, or resumed with their write handle.
// The environment variable OBJUP_FAKE_DATA=1 ([DataEnv]) puts every
// server started without WithDataDir on disk, in a temporary directory:
// CI runs the package's tests so.
//
// # gRPC methods
//
// WriteObject, BidiWriteObject, StartResumableWrite, QueryWriteStatus,
// CancelResumableWrite,
// ReadObject, BidiReadObject, GetObject, ListObjects, DeleteObject,
// UpdateObject, ComposeObject and RewriteObject; GetBucket, CreateBucket,
// DeleteBucket, ListBuckets, UpdateBucket (storage_class, versioning,
// labels and labels.KEY, retention_policy, default_event_based_hold, acl
// and default_object_acl in its update mask, "*" for all of them),
// LockBucketRetentionPolicy, GetIamPolicy, SetIamPolicy (a stale etag is
// codes.Aborted) and TestIamPermissions, which act on the store and
// follow the rules of their JSON API counterparts (see JSON API). The
// server checks what the service checks, and a few things more strictly:
//
//   - the CRC32C of each message's content, when the message carries one, and
//     the whole-object CRC32C and MD5 given in object_checksums at
//     finish_write: a mismatch fails with codes.DataLoss and stores nothing
//     (appendable objects: below);
//   - write offsets: every message with data must start exactly where the
//     data received so far ends (the service tolerates overlaps; the fake
//     reports a gap or an overlap as codes.InvalidArgument; appendable
//     objects: below), and a finish_write must end there too;
//   - object_size, when the spec sets it; at most 2 MiB of content per message;
//   - preconditions (if_generation_match, 0 meaning "must not exist",
//     if_generation_not_match, if_metageneration_match and _not_match),
//     checked atomically with the write or delete: codes.FailedPrecondition.
//     As GCS documents, a *_not_match condition fails when there is no
//     object;
//   - object names as GCS validates them, and "projects/_/buckets/NAME"
//     bucket names: codes.InvalidArgument; unknown buckets: codes.NotFound;
//   - customer-supplied encryption keys: codes.Unimplemented.
//
// A write with write_object_spec in its first message is a one-shot write
// (unless the spec sets appendable: see Appendable objects):
// its data lives only on that stream and is discarded unless finish_write
// arrives. A write whose first message names an upload_id (from
// StartResumableWrite) appends to a resumable session, which keeps every byte
// it accepted until the session is finalized; QueryWriteStatus reports the
// persisted size, or the object once finalized. BidiWriteObject answers a
// message with state_lookup, and a client's half-close of a resumable stream,
// with the persisted size, and finish_write with the object, after which the
// stream ends. A write to a session already finalized gets the object at
// its first message, whatever it carries, and stores nothing more, as
// storage.proto documents. CancelResumableWrite ends an open session:
// nothing is stored, and a later write, status query or cancel of it is
// codes.NotFound, as in Google's storage-testbench; a finalized session is
// not changed by a cancel (OK, its object stays and it keeps answering
// with it); an unknown id is codes.NotFound.
//
// BidiReadObject answers the read ranges of each message in order, in
// messages of at most 2 MiB with their CRC32C, the last of a range marked
// range_end; the first response carries the object's metadata and a read
// handle that names the generation read, so that a stream reopened with it
// reads the same generation (or fails with codes.NotFound once it is gone).
// A range that starts past the end fails the stream with codes.OutOfRange.
// UpdateObject sets the fields its update mask names among content_type,
// content_encoding, content_disposition, content_language, cache_control,
// custom_time (which cannot move back or be removed), metadata and
// metadata.KEY ("*" for all of them), bumping the metageneration as
// objects.patch does; output-only fields in the mask are ignored, other
// fields are codes.Unimplemented. The messages of these two methods are not
// among internal/wire's: they are served raw, from their protobuf encoding
// (see How to add an RPC). A method the fake does not serve is
// codes.Unimplemented.
//
// # Appendable objects
//
// A BidiWriteObject stream whose write_object_spec sets appendable (the
// other write methods refuse it with codes.InvalidArgument) stores the
// object as soon as its first message arrives: empty, unfinalized, the live
// generation of its name, once the spec's preconditions held. The bytes a
// stream sends are pending until they are persisted:
//
//   - a message with flush persists every byte received so far (its own
//     data included); finish_write persists all and finalizes; a clean
//     half-close (the client's CloseSend without finish_write) persists
//     what was sent;
//   - a stream that ends any other way (the client cancels, the connection
//     drops, a BreakStream fault or a RedirectAppend redirect aborts it)
//     loses the bytes it did not persist, so the persisted size can lag
//     what was sent; the next writer continues from the persisted size.
//     (GCS may persist unflushed bytes on its own; the fake never does, so
//     a client that relies on flushes is tested at the strict end.)
//
// Reads see the persisted bytes only: ReadObject, BidiReadObject,
// GetObject, listings and the JSON API (metadata and media) serve them,
// with their size and CRC32C and no finalize_time (timeFinalized); each
// flush replaces the stored record. An appendable object has no MD5,
// finalized or not: no md5_hash, md5Hash, nor md5 in x-goog-hash.
//
// The stream is answered after its first message, with the object as
// persisted (a stream resumed with a handle: the persisted size); after a
// state_lookup, and the client's half-close, with the persisted size and
// the CRC32C of the persisted bytes; after finish_write, with the
// finalized object. Every answer before the finalized object carries the
// writer's write handle (write_handle): the first, and every answer to a
// state_lookup. A message with flush and no state_lookup gets no answer.
// object_checksums may only come with finish_write: their CRC32C is
// verified then (a mismatch is codes.InvalidArgument, as the service
// answers; the bytes are persisted and the object stays unfinalized), and
// an MD5 is refused.
//
// A stream whose first message is an append_object_spec (bucket, object,
// generation, 0 for the live one) continues an unfinalized object from its
// persisted size. With the write handle a response gave, it resumes as the
// same writer; without one, it takes the object over, once its
// if_metageneration_match and _not_match held, and gets the object and a
// new handle. Either way the stream that wrote before is fenced (its next
// message fails with codes.FailedPrecondition, as does a later stream with
// a handle from before a takeover) and loses its pending bytes. A writer
// may resend bytes already persisted (after a lost response): the overlap
// is dropped, as the service does; a gap is codes.InvalidArgument. A
// finalized object takes no more data (codes.FailedPrecondition), but a
// stream with its last handle gets the object back for a retried
// finish_write. A stream whose only message is the spec with finish_write
// (write_offset 0, no data) creates an empty finalized object.
//
// An unfinalized object cannot be deleted (DeleteObject, objects.delete:
// codes.FailedPrecondition, HTTP 400 failedPrecondition), nor overwritten
// by a write that is not appendable (the same error): GCS requires it to be
// finalized first, which a takeover can do. A new appendable write to its
// name replaces it, as GCS lets it (Google's own client tests rely on
// this); the old writer's next message then fails with codes.NotFound.
// Metadata updates apply as to any object.
//
// [Server.RedirectAppend] redirects an appendable stream mid-stream, as GCS
// does when it moves an object's writes: once the stream has received the
// bytes the rule names, the stream fails, before the flush, state_lookup
// or finish_write of the message that reached them, with codes.Aborted
// and a google.storage.v2.BidiWriteObjectRedirectedError detail
// (routing_token, write_handle, generation). The client sees the error on
// its next Recv (a Send may report io.EOF first); the bytes it sent and did
// not flush are lost. It must reopen with an append_object_spec (generation
// and write handle) and the routing token, in x-goog-request-params
// ("routing_token=TOKEN", as the official clients send it) or in
// append_object_spec.routing_token, ask for the persisted size and resend
// from there; a stream that reopens without the token is redirected again.
// The official Go client's appendable writer follows these redirects (see
// TestRedirectAppendOfficialClient).
//
// # Zonal buckets
//
// A bucket made with [WithZonalBucket] (fakegcs -zonal-bucket) is a zonal
// bucket, as GCS's Rapid buckets are: its location type is "zone" (location
// US-CENTRAL1-A) and its storage class RAPID, over both APIs, and so is the
// storage class of every object in it. It takes appendable writes only:
// WriteObject, a BidiWriteObject or StartResumableWrite whose spec is not
// appendable, every JSON API upload (media, multipart, resumable), and a
// compose, copy or rewrite into it fail with codes.InvalidArgument (HTTP
// 400 invalid), not the code of a failed precondition, and store nothing. Reads, listings, metadata
// updates, deletes of finalized objects and copies out of it work as in any
// bucket.
//
// # JSON API
//
// The server answers, under /storage/v1 (and /upload/storage/v1,
// /download/storage/v1 for media):
//
//   - buckets.insert, buckets.get, buckets.list (prefix, pages),
//     buckets.delete (empty buckets only: 409 otherwise), buckets.patch
//     (merge: absent fields are kept, null ones cleared, labels merged)
//     and buckets.update (replace, but for the ACLs), each bumping the
//     metageneration: storageClass, versioning, labels,
//     defaultEventBasedHold, retentionPolicy, acl and defaultObjectAcl
//     are read, the other fields (cors, lifecycle, website, ...) kept and
//     returned as given; predefinedAcl and predefinedDefaultObjectAcl
//     replace the ACLs (bucketOwnerFullControl and bucketOwnerRead are
//     taken for a bucket too, as the storage testbench takes them);
//     buckets.get, delete, patch and update take ifMetagenerationMatch
//     and ifMetagenerationNotMatch; a project parameter is required where
//     GCS requires it, and every bucket belongs to the one project;
//   - buckets.lockRetentionPolicy, under ifMetagenerationMatch (required):
//     a locked policy can be lengthened, not shortened nor removed (403);
//     a bucket without a policy, or whose policy is locked, is answered
//     as it is, as the testbench does. The policy is not enforced;
//   - bucketAccessControls, defaultObjectAccessControls and
//     objectAccessControls: list, insert, get, update, patch and delete,
//     an entry missing being 404; the ACLs are stored and returned, not
//     enforced, and a change bumps the bucket's or the object's
//     metageneration. objects.patch and update take acl, predefinedAcl,
//     temporaryHold and eventBasedHold too. A new object gets no ACL from
//     its bucket's default object ACL (an object's ACL is what its writes
//     and the ACL methods set);
//   - buckets.getIamPolicy, setIamPolicy (the policy's etag, if the body
//     has one, must be the policy's: 412 otherwise) and
//     testIamPermissions (every storage permission asked for is granted,
//     but to a caller held to a role: see Roles);
//   - notifications.list, insert (topic and payload_format required),
//     get and delete: configs are stored, at most 100 per bucket, and no
//     message is sent;
//   - projects.hmacKeys.create, list, get, update (state ACTIVE or
//     INACTIVE, under the body's etag) and delete (inactive keys only,
//     400 otherwise; a deleted key is forgotten), for any project ID, and
//     projects.serviceAccount.get;
//   - objects.insert with uploadType=media (the body is the content),
//     multipart (a multipart/related body: the object resource, then the
//     content; its boundary parameter in any form RFC 2046 allows, and
//     single-quoted as Python's HTTP stack writes it) and resumable, on
//     the upload path or on /resumable/upload/storage/v1/ (where gcloud
//     and gsutil start sessions): the first POST answers with the session URI
//     in Location; chunks go to it by PUT or POST with
//     Content-Range "bytes A-B/T" or "bytes A-B/*", or "bytes A-*/T" and
//     "bytes A-*/*" for the rest of the object to the end of the body (the
//     Node.js client's default upload: with "*" the body's end is the
//     object's, unless the session declared X-Upload-Content-Length);
//     without a Content-Range the body is the whole object; an unfinished session
//     answers 308 with Range "bytes=0-N" (or 200 with
//     X-Http-Status-Code-Override: 308 when the client sends
//     X-GUploader-No-308: yes, as Google's Go libraries do); "bytes */*" or
//     "bytes */T" asks for the status, and completes the upload when T bytes
//     are there; DELETE cancels (499), after which the session answers
//     its PUTs, status queries and DELETEs with 499, as GCS does (a
//     finalized session keeps its object and answers a PUT with it; an
//     unknown one is 404). A chunk that overlaps bytes already
//     persisted is accepted and the overlap dropped; a gap is refused.
//     A request whose body ends before its Content-Length, or whose chunked
//     body is cut off before its last chunk (even once a multipart body's
//     closing delimiter, or all the bytes of a chunk's Content-Range,
//     came), and a multipart body without its closing delimiter (or with
//     a mistyped one) are refused with 400 (or a dropped connection) and
//     store nothing. A chunk cut short leaves its session with the bytes
//     that arrived in whole 256 KiB units of the object, as GCS persists
//     them, never the whole object: a status query reports them, and the
//     client resumes from there; a chunked body longer than its
//     Content-Range is refused. A session's status is answered while a
//     chunk is still on its way. Declared checksums (crc32c and md5Hash
//     in the resource, X-Goog-Hash on the last request) are verified:
//     a mismatch is 400 and stores nothing. The preconditions of a resumable upload are checked when
//     the session starts and again when the object is stored;
//   - objects.get: the resource, or with alt=media (and on the download
//     path) the content, with one Range (bytes=A-B, A-, -N; 206 with
//     Content-Range, 416 past the end), the generation parameter, and the
//     headers x-goog-hash (crc32c and md5), x-goog-generation,
//     x-goog-metageneration, x-goog-stored-content-length and -encoding;
//   - objects.list: prefix, delimiter, includeTrailingDelimiter,
//     startOffset, endOffset, versions, maxResults (at most 1000, objects
//     and prefixes counted together) and pageToken, and
//     includeFoldersAsPrefixes (the fake has no folders, so it changes
//     nothing);
//   - buckets.getStorageLayout (location, locationType, and
//     hierarchicalNamespace when the bucket was given it enabled), and
//     managedFolders.list, always empty: the fake keeps no managed folders;
//   - objects.delete, objects.patch (merge: absent fields are kept, null
//     ones cleared, metadata keys merged) and objects.update (replace);
//     both bump the metageneration, and customTime cannot move back or be
//     removed;
//   - path-style reads, GET and HEAD /BUCKET/OBJECT, with the generation
//     parameter and the x-goog-if-generation-match and
//     x-goog-if-metageneration-match headers; and of the XML API the
//     simple upload (PUT /BUCKET/OBJECT), the multipart uploads and the
//     list of a bucket (xml_put.go, xml_multipart.go, xml_bucket.go).
//     Their errors are XML.
//
// Every JSON method takes the ifGenerationMatch, ifGenerationNotMatch,
// ifMetagenerationMatch and ifMetagenerationNotMatch parameters where GCS
// does: a failed *Match is 412, a failed *NotMatch is 304 Not Modified, as
// GCS documents. Errors have the GCS JSON error body ({"error": {"code",
// "message", "errors": [{"reason", ...}]}}) and the status GCS uses (400,
// 404, 409, 412, 416, ...). Object names in paths are URL-path-escaped, as
// clients send them. objects.compose joins 1 to 32 source objects of the
// bucket into the destination without copying their bytes: the CRC32C is
// the sources' combined, there is no MD5, and componentCount adds up the
// sources', as ComposeObject does over gRPC. objects.copy and
// objects.rewrite give the destination the source's content without
// copying it, with its CRC32C and MD5, and its attributes (not its ACL,
// holds and retention) patched with the body's, under the ifSource* and
// the destination's preconditions; a rewrite with
// maxBytesRewrittenPerCall (a multiple of 1 MiB) goes in calls of that
// many bytes, each answered with a rewrite token that carries its state,
// and one without it completes in one call. Anything else (soft delete,
// objects.restore and move, matchGlob, batch, KMS keys, object retention
// and contexts over JSON, other XML writes, folders and the managed folder
// methods but list, anywhere caches, long-running operations) answers 501
// with a message that names the method. The fields
// parameter is ignored (responses carry every field), as are projection and
// userProject; objects are served as stored (no decompressive transcoding
// of gzip content).
//
// # Differences from fake-gcs-server
//
// A differential test (TestDifferentialJSON) runs one sequence of
// operations with the official Go client over JSON against fake-gcs-server
// v1.56.1 and against this fake, and compares the results. Uploads of every
// size from 0 to 20 MiB in every mode, overwrites, range reads, listings,
// versions, deletes, not-found and a compose of three objects agree. Where
// they differ, this fake follows GCS's documented behaviour:
//
//   - a failed ifGenerationNotMatch or ifMetagenerationNotMatch is 304 Not
//     Modified (fake-gcs-server: 412 on writes, and it ignores them on
//     objects.get);
//   - fake-gcs-server ignores x-goog-if-generation-match on path-style
//     reads, ifMetagenerationMatch on objects.get, and the preconditions of
//     objects.patch and objects.delete; here they fail with 412;
//   - a metadata update returns the bumped metageneration
//     (fake-gcs-server's patched resource has none), and "metadata": null
//     clears the metadata (fake-gcs-server keeps it);
//   - maxResults bounds items and prefixes together (fake-gcs-server counts
//     only items and repeats later prefixes on every page);
//   - deleting a bucket that is not empty is 409 Conflict
//     (fake-gcs-server: 412);
//   - a compose with a missing source is 404 (fake-gcs-server: 500), and
//     one whose destination's ifGenerationMatch fails is 412
//     (fake-gcs-server ignores it).
//
// # Slow commits
//
// GCS commits a write in its own time, and at the tail takes seconds.
// [WithCommitDelay] makes every write that stores an object wait a fixed
// delay before it stores it, and [WithCommitDelays] a delay drawn per
// write ([CommitJitter]: uniform between two bounds, from a seeded
// source, the same sequence for a seed). The writes that wait: a one-shot
// WriteObject or BidiWriteObject, a resumable session's finish_write and
// a JSON resumable upload's last request, JSON media and multipart
// uploads, compose, copy and a rewrite's last call (both APIs), and an
// appendable object's finalize. The wait is not cut short when the client
// leaves: the object is stored all the same, as a service that received
// the write whole may store it.
//
// Whether GCS applies a gRPC write whose deadline (grpc-timeout) passed
// before it was applied is not shown: its documentation does not say it
// drops one, Google's storage-testbench never reads the deadline, and
// gRPC defines DEADLINE_EXCEEDED as possibly returned for an operation
// that completed. So the fake applies it, the conservative model;
// [WithDeadlineDrop] makes the fake drop it instead (codes.DeadlineExceeded,
// nothing stored), an assumed behaviour for experiments only.
//
// # Roles
//
// [WithCredential] (fakegcs -credential TOKEN=ROLE) holds the requests
// that carry a bearer token ("authorization: Bearer TOKEN", as gRPC
// metadata or an HTTP header) to one of Cloud Storage's predefined roles
// on objects: [RoleObjectViewer] (storage.objects.get and list),
// [RoleObjectCreator] (storage.objects.create only, an uploader's usual
// role), [RoleObjectUser] (create, delete, get, list, update) and
// [RoleObjectAdmin] (storage.objects.*). A request without a token, or
// with one the server does not know, keeps full access. A request its
// role does not allow is refused before it does anything, as GCS refuses
// it: HTTP 403 with the JSON error body, reason "forbidden" and the
// message "Caller does not have PERMISSION access to the Google Cloud
// Storage object. ...", or codes.PermissionDenied with that message.
//
// Each method needs what storage.proto's IAM Permissions sections and
// the JSON API's reference say: a write (WriteObject or BidiWriteObject
// opening an object with write_object_spec or append_object_spec,
// StartResumableWrite, objects.insert) storage.objects.create; reads
// (GetObject, ReadObject, BidiReadObject, objects.get, path-style GETs)
// storage.objects.get; ListObjects and objects.list storage.objects.list;
// deletes storage.objects.delete; UpdateObject, objects.patch and update
// storage.objects.update; ComposeObject, RewriteObject, objects.compose,
// copy and rewrite storage.objects.create and storage.objects.get; the
// object ACL methods storage.objects.getIamPolicy or setIamPolicy;
// buckets.testIamPermissions and gRPC TestIamPermissions nothing; every
// other bucket or project method a bucket permission no object role
// grants. A write that would replace a live object also needs
// storage.objects.delete, as GCS requires to overwrite: checked where the
// fake checks preconditions (when a resumable session starts and when the
// object is stored), after them, so a create-only caller's write with
// ifGenerationMatch=0 to an existing name fails its precondition (412,
// codes.FailedPrecondition) and one without it is refused (403). (GCS
// documents that an overwrite needs the delete permission; the order of
// the two checks is not documented, and is the fake's choice.)
//
// The later requests of a resumable session (the PUTs, status queries and
// DELETE to a JSON session URI; QueryWriteStatus and writes that name an
// upload_id over gRPC) are not checked: GCS documents that a session URI
// needs no further authentication, and storage.proto names no permission
// for QueryWriteStatus or for resuming. The session keeps the role of the
// request that started it for its overwrite check. The IAM policies that
// buckets.setIamPolicy stores are not enforced: roles come from
// WithCredential only.
//
// # Request log and faults
//
// Every call is recorded with its method (the gRPC method, e.g.
// "WriteObject", or the JSON API method: "objects.insert", "objects.get",
// "objects.list", "objects.delete", "objects.patch", "objects.update",
// "objects.compose", "objects.copy", "objects.rewrite", "buckets.insert",
// "buckets.get", "buckets.list", "buckets.delete", "buckets.patch",
// "buckets.update", "buckets.lockRetentionPolicy", "buckets.getIamPolicy",
// "buckets.setIamPolicy", "buckets.testIamPermissions",
// "bucketAccessControls.list" and the other ACL methods,
// "notifications.insert" and the others, "projects.hmacKeys.create" and
// the others, "projects.serviceAccount.get"; "xml.objects.get", ".put",
// ".list" and "xml.multipart.initiate", ".uploadPart",
// ".complete", ".abort", ".listParts" and ".list"), the tenant (the last
// x-scope-orgid metadata value or header), the bucket and object when known,
// and its final status code: see [Server.Calls]. The log is a ring of the
// last [DefaultCallLog] calls ([WithCallLog] sets the size), so it stays
// bounded however long the server runs, and [Server.CallCounts] counts every
// call by method, tenant and code. Recording a call is one short critical
// section at its end, on the goroutine that served it: a copy into the ring
// and a map increment. [Server.Usage] reports the objects and bytes each
// tenant has stored; GET /_objup/stats on the HTTP server serves both as
// JSON, with the sessions ([Server.Sessions]) and the write capacity's
// counts ([Server.CapacityStats]).
//
// Tests inject failures into gRPC calls (and XML API calls, by the names
// above: see xml_faults.go) with [Server.FailCall],
// [Server.BreakStream], [Server.CorruptNext], [Server.Delay],
// [Server.LoseAnswer] and [Server.RedirectAppend] (see Appendable
// objects), and remove them with [Server.ClearFaults].
//
// # Write capacity
//
// GCS limits a bucket's object writes (about 1,000 a second for a new
// bucket, growing over minutes under load) and the writes to one object
// name (about one a second), and answers more with HTTP 429 or gRPC
// RESOURCE_EXHAUSTED, or 503. [WithCapacity] gives every bucket such a
// capacity, and [WithBucketCapacity] one bucket its own: a
// [capacity.Config] of package fakes/capacity, which says what each knob
// models (a token bucket of writes with its rate and burst, autoscaling
// once saturated, a limit per object name, a share of 503).
//
// One write is one call that creates, changes or deletes an object: over
// gRPC, a WriteObject or BidiWriteObject stream whose first message has a
// write_object_spec (a one-shot or appendable write), StartResumableWrite,
// ComposeObject, DeleteObject, UpdateObject and the first call of a
// RewriteObject; over JSON, objects.insert with uploadType media or
// multipart, the POST that starts a resumable session, objects.compose,
// objects.delete, objects.patch, objects.update, objects.copy and the
// first call of objects.rewrite; over XML, a PUT and the complete of a
// multipart upload. The later requests of a session (a stream
// that names an upload_id or continues an appendable object, the PUTs to a
// session URI, status queries, the calls of a rewrite that carry its
// token) and reads are not counted. A write is judged once its bucket and
// object name are known, and before its content is read: a write to a
// bucket that does not exist, or of a name GCS refuses, is answered with
// that error and not counted.
//
// A refused write stores nothing, and is answered as GCS answers: a bucket
// over its rate with gRPC codes.ResourceExhausted, or over JSON 429 with
// {"error": {"code": 429, "message": M, "errors": [{"message": M,
// "domain": "usageLimits", "reason": "rateLimitExceeded"}]}}, M saying
// that the bucket exceeded its rate; the share of 503 as
// codes.Unavailable, or 503 with reason "backendError"; an object name
// over its rate with codes.ResourceExhausted or 429, M in GCS's words
// for it, "The object BUCKET/NAME exceeded the rate limit for object
// mutation operations (create, update, and delete). ...", so that a client
// can tell a hot name from a full bucket. The tenant of each write is read
// as the request log reads it. [Server.CapacityStats] counts, per bucket and
// per tenant, the writes admitted and refused by each limit, with each
// bucket's rate as autoscaling left it; GET /_objup/stats serves them too.
//
// A server without a capacity pays one nil check per write. With one, a
// write costs a look-up of its bucket's state and one short critical
// section under that bucket's own mutex; no goroutine or timer runs, and
// the names remembered are those written in the last few seconds
// (see package fakes/capacity).
//
// # Retry test API
//
// The HTTP server also serves the retry test API of Google's storage
// testbench, which the official clients' retry conformance suites drive
// (conformance/run.sh runs the Go client's against fakegcs):
//
//   - POST /retry_test with {"instructions": {"storage.objects.insert":
//     ["return-503", "return-503-after-256K"], ...}, "transport": "HTTP" or
//     "GRPC"} creates a test and answers its resource, {"id", "instructions",
//     "completed", "transport"};
//   - GET /retry_test/ID answers it, with the instructions not consumed yet,
//     and completed true once none is left; DELETE /retry_test/ID removes
//     it; GET /retry_tests lists them. A server keeps the last 4096 tests.
//
// A request that names a test (header x-retry-test-id over HTTP, metadata
// x-retry-test-id over gRPC) and arrives over the test's transport consumes
// the test's next instruction for its method, as the testbench does. Over
// HTTP the method is the JSON API method of the request (path-style reads
// are storage.objects.get, and the cancel of a resumable session
// storage.objects.delete), with the testbench's names for the ACL, HMAC
// key and service account methods (storage.bucket_acl.list,
// storage.default_object_acl.get, storage.object_acl.patch,
// storage.hmacKey.create, storage.serviceaccount.get); over gRPC, WriteObject, BidiWriteObject and
// StartResumableWrite consume those of storage.objects.insert, ReadObject,
// BidiReadObject and GetObject those of storage.objects.get, UpdateObject
// those of storage.objects.patch, ListObjects, DeleteObject, ComposeObject
// and RewriteObject their own, the bucket methods theirs (UpdateBucket
// storage.buckets.patch, CreateBucket storage.buckets.insert, GetIamPolicy
// storage.buckets.getIamPolicy, ...); QueryWriteStatus consumes none; the
// XML API's calls: see xml_faults.go.
// GET /start_grpc?port=N answers 200 with the gRPC server's port, as the
// testbench does once its gRPC server listens, when N is that port. The
// instructions:
//
//   - return-N, for N from 400: the call fails at once with HTTP status N,
//     or over gRPC with the testbench's code for it (400 InvalidArgument, 401
//     Unauthenticated, 408 and 503 Unavailable, 429 ResourceExhausted, 500
//     Internal, 504 DeadlineExceeded; the usual code for the others); a gRPC
//     stream fails once the server has read its first message, so that the
//     client's first send cannot see the stream's end before its status;
//   - return-reset-connection: over HTTP the server resets the TCP connection
//     (RST) before it answers; over gRPC the call fails with Unavailable, as
//     return-503 does;
//   - return-broken-stream and return-broken-stream-after-NK: the response
//     stops after 4 bytes or N KiB of content: over HTTP the connection is
//     closed in the middle of the body, over gRPC ReadObject and
//     BidiReadObject send the bytes up to the limit and fail with
//     Unavailable;
//   - return-N-after-MK, on uploads: the request whose content reaches M KiB
//     into the object (over HTTP a chunk of a resumable session, over gRPC a
//     write message) is cut there, the bytes before are kept (a resumable
//     session and an appendable object persist them: the cut message of an
//     appendable write counts as flushed; a one-shot write keeps nothing) and the upload fails with N, without an answer to the cut
//     message. Over HTTP, as in the testbench, a chunk sent once the
//     session already holds M KiB fails at once, and a single-shot upload
//     (media or multipart) of at least M KiB by its Content-Length fails with
//     nothing stored;
//   - stall-for-Ss-after-MK, over HTTP: a response waits S seconds once M KiB
//     of its body went out; an upload waits before it stores the chunk that
//     reaches M KiB (a single-shot one of at least M KiB, before it starts);
//   - redirect-send-token-T, on storage.objects.insert over gRPC: a
//     BidiWriteObject stream fails once its first message is read, with
//     codes.Aborted and a google.storage.v2.BidiWriteObjectRedirectedError
//     detail that carries the routing token T;
//   - redirect-send-handle-and-token-T: an appendable write fails as soon as
//     its first message created or opened the object, before its data, with
//     codes.Aborted and a BidiWriteObjectRedirectedError that carries T, the
//     write handle and the generation to resume with;
//   - redirect-expect-token-T: consumed by a BidiWriteObject call whose
//     x-goog-request-params carry routing_token=T (the instruction after it
//     then applies to the same call); a call without the token leaves it in
//     place, and the test does not complete.
//
// An instruction about bytes is consumed when a request reaches them, not
// before. POST answers 400 for a method or an instruction the testbench does
// not know, and 501, with a message that names it, for a method the fake
// does not serve over the test's transport (storage.objects.restore; over
// gRPC the ACL, notification, HMAC key and service account methods, which
// storage v2 does not have, and storage.buckets.update), for an
// instruction on a method
// or transport it does not
// apply to there (redirects apply to storage.objects.insert over gRPC), and
// for the few others it does not implement (return-broken-stream-final-
// chunk-after-NB, return-N-if-dp-enforced, return-unreachable-buckets): a
// conformance suite skips those cases. A server with no test pays one atomic load per request.
//
// # Cost
//
// The fake sits next to the clients it serves in benchmarks, so it keeps its
// own work small: an upload keeps each message's content as gRPC decoded it
// (no copy), checks each message's CRC32C once and derives the object's
// CRC32C by combining them; a read sends a message straight from the stored
// part when its bytes lie in one. MD5, which GCS reports, runs once over
// every byte written: at roughly 0.5 to 1 GB/s it dominates large writes.
// Each flush of an appendable write stores a copy of the object's record
// (a few hundred bytes) under the bucket's lock, and computes no MD5.
// Resumable sessions that are never finalized keep their data until they
// expire: a week after their last use, as on GCS ([WithSessionExpiry]), or
// earlier when more than [DefaultMaxSessions] are open ([WithMaxSessions]),
// the one unused longest first; [Server.Sessions] and /_objup/stats count
// them. Finalized ones keep only their object, and the server remembers the
// last 4096 of them. BidiReadObject copies each message's content once, into
// the message it sends.
//
// # Sink
//
// Package fakes/sink (and fakes/cmd/gcssink) is a second server, for
// benchmarks: the storage v2 write RPCs with the fake's checks (write
// offsets, CRC32C per message and per object, finish_write, object_size).
// One write engine in fakes/internal/writes serves both: each stream's
// state machine (its first message opens a one-shot write, resumes a
// session or opens an appendable object; offsets, flushes, state lookups,
// finish_write, the session's persisted size, finalize) is the same code,
// and only what is done with the bytes differs: the fake stores them, the
// sink counts them and drops them. The sink decodes each message's
// content where gRPC received it, without a copy, and computes MD5 only
// when the client declares one, so what a benchmark measures is the
// client. sink.WithCapacity gives its
// buckets the same write capacity as [WithCapacity], checked on its write
// path (one-shot writes, session starts, and with sink.WithCompose
// compose and delete). It serves appendable writes with the fake's rules
// (flushes, state lookups, write handles, takeovers, finish_write; the
// writer state is shared as well), and
// sink.WithZonalBucket (gcssink -zonal-bucket) makes a bucket zonal.
//
// # Distance
//
// [WithLink] puts a simulated network path (package fakes/link: a round-trip
// time, and a bandwidth per connection and direction) in front of both
// ports, and sink.WithLink in front of the sink's, so a client on loopback
// uploads as if from 1 to 100 ms away. Behind a link the gRPC servers
// advertise HTTP/2 windows of 64 MiB per stream and 256 MiB per connection
// (link.ServerWindows), so that the client and the path bound an upload,
// not grpc-go's estimate of the window. [WithMaxStreams] (and
// sink.WithMaxStreams) caps the concurrent streams of one gRPC connection
// as GCS's front ends do, about 100, and [Server.Conns] then counts each
// connection's calls.
//
// # Front end
//
// Package fakes/frontend runs HAProxy (Debian's 2.6, which .ci/haproxy.sh
// installs) on loopback as an L7 proxy in front of either port, HTTP/2
// on both sides for gRPC or HTTP/1.1 for the JSON API, so that a test can
// put a real front end between a fault proxy (fakes/faultproxy) and the
// fake, as Google's front ends stand before GCS; a test skips where
// HAProxy is missing.
//
// # How to add an RPC
//
// Every method the gRPC server serves is one entry of the table rpcs
// (rpcs.go): its name (the gRPC method name, which the request log records
// as Call.Method), its handler, the retry test method whose instructions
// it consumes (retry), and whether the fault rules take it (faults, for a
// method with an exported Method name). The server registers one
// grpc.ServiceDesc built from the table; its interceptors record each call,
// apply the fault rules and the retry test, whatever the method. To add one:
//
//  1. write its handler: a unary method on internal/wire's messages is a
//     method of service, entered with unaryRPC; any other method is a
//     func(*Server, grpc.ServerStream) error, which for messages not in
//     internal/wire reads and writes their encoding with recvRaw, sendRaw
//     and eachField (grpc_raw.go; see grpc_buckets.go), entered with raw;
//  2. add its entry to rpcs, with its retry test method if the testbench
//     has one (package fakes/internal/retrytest then accepts instructions
//     for that method over gRPC), and list it under gRPC methods above.
//
// The request log, the counters, Conns, the fault rules and the retry test
// need nothing more. A test drives it through a client as grpc_buckets_test
// does.
//
// # In tests
//
// [NewTest] starts a server and closes it when the test ends. It takes the
// small [TB] interface rather than testing.TB, so programs that import fakes
// (such as fakes/cmd/fakegcs) do not link the testing package. Package fakes
// does not import fake-gcs-server or the official storage module: programs
// that use it stay small.
package fakes
