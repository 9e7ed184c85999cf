// Package uploader is objup's public SDK: a client that uploads objects to
// Google Cloud Storage over its gRPC API (google.storage.v2), or its JSON API
// over HTTP (WithHTTP), built for services that write huge numbers of small
// objects for many tenants. Both transports share the Writer, its buffers,
// checksums, retries and header chain; the JSON API's equivalents of the
// calls named below are a multipart upload (one-shot) and a resumable
// session of PUTs.
//
// # Uploading
//
// A Client is created once with NewClient and shared. Writer (from
// Client.NewWriter) is an io.WriteCloser and io.ReaderFrom for one object;
// Client.Upload writes one io.Reader; Client.UploadMany uploads many items with
// bounded concurrency.
//
// A Writer runs one loop on the caller's goroutine: take an empty buffer, fill
// it, hand the full chunk to the sender. An object that fits in one chunk
// (256 KiB by default) goes out in exactly one WriteObject call carrying spec,
// data and CRC32C: no resumable session, no extra round trip, no goroutine (a
// chunk over 2 MiB, see WithChunkSize, goes out as several messages of one
// WriteObject stream, for which gRPC starts one goroutine). Larger objects
// stream through a resumable session (StartResumableWrite, then
// BidiWriteObject) with a bounded number of chunks in flight; after a
// transient failure the Writer asks QueryWriteStatus and resumes where the
// service left off. Every message carries at most 2 MiB and its own CRC32C,
// computed once per byte and combined for the object. An object is stored
// only when Close returns nil; a failed or cancelled upload leaves nothing
// behind unless its error says the outcome is unknown (see "The truth about
// an outcome").
//
// # Memory
//
// Chunks come from a pool.Allocator: pool.Default() unless WithPool says
// otherwise (a pool.Pool with a byte budget gives the process a memory ceiling).
// WithBuffer lends the Writer the caller's own buffer instead. A chunk is never
// copied on its way to the network: gRPC sends it in place, and it goes back to
// its allocator only after gRPC let go of it and the service acknowledged it.
// The chunk size is at most 64 MiB.
//
// # Distance and connections
//
// The window of a resumable upload, the bytes sent and not yet
// acknowledged, adapts to the path: it starts at 16 MiB, grows fourfold per
// round trip while the acknowledged rate keeps rising, up to a bound (experimental.WithMaxInFlight),
// and halves when the pool's budget runs out, so the budget stays the
// process's ceiling (experimental.WithChunksInFlight fixes it instead). Uploads spread
// over a pool of gRPC connections (option.WithGRPCConnectionPool, default
// four), since a front end caps the streams of one
// connection; beside a pool of two or more, small calls have a connection of
// their own, so they do not wait behind large uploads' bytes. A connection
// whose handshake does not complete within experimental.WithConnectTimeout is dialled
// anew.
//
// # Parallel composite uploads
//
// One stream is bounded by its connection's bandwidth. WithParallelUpload
// cuts a large object into parts, uploads each part as a temporary object
// of the same bucket in one WriteObject call (objects.insert over the JSON
// API), several at once over the connection pool, joins them with
// ComposeObject (in rounds of at most 32 sources), checks the result's size
// and CRC32C against what was written, and deletes the temporary objects
// whatever the outcome; a failed part fails the upload with its cause. A
// part's memory comes from the client's pool and goes back once the part is
// stored. The costs (more operations, no MD5 on a composite object, the
// temporary objects' storage class and retention) are listed on the option.
//
// # Appendable objects and zonal buckets
//
// A zonal (Rapid) bucket holds appendable objects only. WithAppendable
// writes one (gRPC only): a small object is created and finalized in one
// BidiWriteObject stream, as Upload and UploadMany do with the option; a
// Writer streams its chunks on one stream, Writer.Flush makes what was
// written durable and readable and returns the service's persisted size,
// and Close finalizes the object with the CRC32C of all of it (or leaves it
// open, WithoutFinalize). Client.TakeOver opens a Writer on an unfinalized
// object at its generation and goes on from its persisted size. Bytes are
// kept until the service persisted them: after a broken stream or a
// redirect (whose routing token and write handle are followed) the Writer
// opens the object's stream again and resends what the service lacks. An
// idle Writer holds no chunk buffer and one goroutine, its stream's
// receiver; a Flush of a few bytes copies them out of their buffer.
//
// # Uploads that outlive the process
//
// Writer.Handle returns, at any moment, what a later process needs to
// continue the upload: a resumable session (its id, and the bytes the
// service persisted with their CRC32C), a parallel upload (its temporary
// objects' prefix and parts), an appendable object (its generation). A
// Handle is a plain value that encoding/json marshals. Client.Resume
// continues it from the same source (an io.ReaderAt, such as a file): it
// checks the source's bytes against the handle before anything is sent
// (IsSourceChanged), asks the service where the upload stands, and sends
// only the rest; a session the service finished returns its object. A
// Journal (WithJournal) keeps every running upload's handle in a
// directory, written before the bytes it names go out, so that a process
// killed at any instruction leaves what the next one needs; Client.Discard
// abandons an upload a handle names. With a journal, a parallel upload's
// last compose replaces only the generation that was live before it, so
// that a compose made again after a kill cannot store a second generation.
//
// # Retries and dead connections
//
// One retry engine serves every RPC of an upload (see WithRetry): one
// classification (ShouldRetry, or Retry.ErrorFunc), one exponential backoff
// with full jitter (gax.Backoff), a retry deadline per failure episode
// (Retry.Deadline) and a timeout per attempt (Retry.AttemptTimeout). Errors
// that never left the process, such as a header gRPC refuses, are never
// retried. A one-shot upload is retried only when a precondition makes it
// idempotent, unless Retry.Policy RetryAlways says otherwise; a resumable
// upload resumes. gRPC keepalive (experimental.WithKeepalive) detects a connection that
// silently stopped forwarding, so it is replaced and the retry goes out on a
// new one; an attempt that gets no answer within its attempt timeout is
// cancelled, its stream reset (see below).
//
// # The truth about an outcome
//
// GCS is reached through front ends that read a request eagerly and pass
// it on, and it commits in its own time: what it has read whole it may
// apply later, whatever the client does next (a reset stream, a closed
// connection, a retry). So objup promises only what GCS's own mechanisms
// make true, and says which:
//
//   - Close (Upload) returns nil only when objup holds the service's
//     answer for the object: Attrs describes that generation, whose size
//     and CRC32C objup checked. A finished object of another size or
//     CRC32C is a DataLoss error that is also IsOutcomeUnknown, since the
//     service stored it.
//   - An error for which IsOutcomeUnknown is false means that nothing was
//     stored and, for the mechanisms named here, nothing will be: no
//     request that could write the object went out, or the service
//     refused each one, or a resumable session was cancelled
//     (CancelResumableWrite, or a DELETE of its URI), after which nothing
//     of it can be finalized.
//   - Otherwise the outcome is unknown (IsOutcomeUnknown): a request went
//     out whole and its answer was lost (a broken connection, an attempt
//     timeout, the context ending), and no mechanism settled it. The
//     object may exist, or may appear later.
//
// How each kind of upload settles a lost answer, with at most one extra
// call (two for a session whose cancel fails):
//
//   - A resumable session (objects over one chunk, or any object
//     WithResumable): the session finalizes one object at most and is the
//     authority on whether it did. After a lost answer the upload asks it
//     (QueryWriteStatus) and goes on from what it persisted; a message of
//     it that arrives late cannot make a second generation; an upload that
//     fails once its finish may have gone out cancels the session, or, if
//     the service refuses the cancel, asks whether the session finalized
//     and returns its object. Its outcome is unknown only when the service
//     cannot be reached before the context ends. WithResumable costs one
//     round trip more than a one-shot write.
//   - A one-shot write (an object of one chunk): nothing identifies the
//     object once the answer that carried its generation is lost (a
//     look-up cannot tell it from another writer's object of the same
//     bytes). A retry that succeeds settles it (nil); a retry that meets
//     a precondition (DoesNotExist: 412), or a failure after the lost
//     answer, leaves it unknown. The lost attempt itself may still be
//     applied after Upload returned: with DoesNotExist only while the
//     object does not exist (after the caller deleted it, say), without a
//     precondition as one more generation of the same bytes.
//   - A parallel composite upload: its parts live under a prefix of the
//     upload's own, so a part found there after a lost answer is the
//     upload's. A part the service applies after the cleanup is left under
//     TempPrefix (see WithParallelUpload). The compose is a one-shot
//     write of the final object.
//   - A multipart upload (ViaMultipart): the upload id completes one
//     object at most, once. A complete repeated after a lost answer that
//     finds the upload gone (NotFound) was preceded by the lost one; a
//     complete whose every attempt failed is settled by an abort (done:
//     nothing is stored, nor will be; NotFound: it completed; NotFound
//     after an abort whose own answer was lost: either one ended it, and
//     the live object tells when it holds the bytes written, else the
//     outcome is unknown). Parts are
//     repeated at will (a part number sent again replaces the part), and
//     the abort drops them.
//   - An appendable object: its generation, in the first answer, is its
//     identity; a finish whose answer was lost is settled by looking that
//     generation up (storage.objects.get). A first stream whose answer was
//     lost ends the upload with an unknown outcome: it may have created
//     the object, and a late copy of it would replace any generation the
//     Writer went on with, flushed bytes and all.
//
// Exactly once: pass WithResumable and DoesNotExist. Close then
// returns nil for the one object this upload stored; an error that is not
// IsOutcomeUnknown means nothing was stored and nothing will be; after an
// unknown outcome, a new upload of the same name DoesNotExist cannot
// make a second object (it fails with a precondition error if the first
// landed).
//
// What no client can promise: that a one-shot request the service read
// whole is never applied later. gRPC sends each request's deadline
// (grpc-timeout), but GCS does not document that it drops a write whose
// deadline passed before it was applied, so objup relies on sessions and
// preconditions instead.
//
// A timeout or a cancellation ends one attempt's stream (RST_STREAM),
// never a connection that other uploads share; gRPC keepalive
// (experimental.WithKeepalive) and the TCP_USER_TIMEOUT gRPC sets find a connection
// that died. No call runs more than about a second past its context.
// What must go on after that (a parallel upload's parts whose last
// request is out, the deletion of its temporary objects, the cancellation
// of an abandoned session) runs in the background, bounded by the attempt
// timeout and a minute of cleanup, and Client.Close waits for it.
//
// Credentials with storage.objects.create alone (roles/storage.objectCreator)
// upload one-shot, resumable and appendable objects; a session needs no
// other permission to be asked or cancelled. Look-ups (an appendable
// finish whose answer was lost) need storage.objects.get: refused, the
// outcome is unknown. A multipart upload (the default of
// WithParallelUpload) needs the multipart permissions the role holds; a
// parallel composite upload needs get and delete, and says so before its
// first part goes out.
//
// A network failure is Unavailable over both transports (an answer that
// broke off included); Internal is left for the service's own status.
//
// # When the service pushes back
//
// Every object write of a client passes an admission stage per bucket (see
// experimental.WithoutAdmission): free until the bucket first refuses writes for load
// (429, RESOURCE_EXHAUSTED, 503), then a rate learnt from the answers, at
// which writes wait for their turn, tenant by tenant and oldest first,
// never failing for it. A write refused for load was not applied, so it is
// retried whatever the retry policy says of idempotence, and retries pass
// the same stage. A write that finds none of the client's writes to the
// bucket in flight or waiting goes at once while the service refuses few
// of them: one write at a time cannot multiply the load, and a quiet
// client beside busy ones keeps its share. The figures are metrics: objup.admission.wait,
// objup.admission.rate, objup.admission.rejections and
// objup.admission.waits. TenantLimits.Writes caps a tenant's writes per
// second.
//
// # Tenants and headers
//
// Headers added to the context with the header package (header.WithTenant,
// header.Append) travel with every RPC of an upload, flattened once per RPC
// together with the x-goog-request-params routing header. NewWriter checks
// them first (header.Validate): a value gRPC would refuse is an
// InvalidArgument error before anything is sent.
//
// When the pool's budget is spent, uploads waiting for a buffer are served
// tenant by tenant (the tenant of header.WithTenant or Item.Tenant), so one
// tenant's burst does not push the others to the back, and by default one
// tenant holds at most 7/8 of the budget, so the others find a buffer at
// once; WithTenantLimits sets per-tenant limits of uploads and buffer
// bytes, and weights. A tenant at a limit waits, as its context allows, and
// never fails for it.
//
// # Errors
//
// Every error that NewClient, NewWriter, the Writer's methods and Upload
// return is an *Error with a gRPC code and the cause. A Writer's methods
// called from several goroutines at once panic instead: that is a bug in
// the caller, not an outcome.
//
//   - codes.InvalidArgument: an invalid bucket or object name, option,
//     buffer, header or reader, found before anything was sent; or a request
//     the service refused;
//   - codes.FailedPrecondition: a precondition did not hold (the service's
//     answer, and nothing else);
//   - codes.Canceled and codes.DeadlineExceeded: the context ended (the cause
//     wraps context.Canceled or context.DeadlineExceeded, so errors.Is works),
//     or CloseWithError abandoned the upload (Canceled), or the client, or
//     for a Write after a successful Close the Writer, was closed (Canceled,
//     and errors.Is(err, fs.ErrClosed) holds);
//   - codes.DataLoss: the service found a checksum mismatch, or reported a
//     size or CRC32C other than what was sent;
//   - codes.Unavailable: the network failed (the retries ran out, or the
//     upload was not to be retried);
//   - any other code: the service's status for the named operation (Op), or,
//     when the retries ran out, the last attempt's status, kept in the cause
//     so that status.Code(err) and the message still tell what failed.
//
// CodeOf reads the code of any error, and IsOutcomeUnknown tells an upload
// that may have been stored; errors.Is matches fs.ErrNotExist (NotFound), fs.ErrPermission
// (PermissionDenied, Unauthenticated) and the context errors; and
// status.FromError gives the service's status.
//
// # Telemetry
//
// Each upload records OpenTelemetry metrics once, when it ends (objup.uploads,
// objup.upload.duration, objup.upload.size, objup.upload.retries,
// objup.upload.resumes, with the attributes objup.result, objup.path
// (one-shot, resumable or parallel) and, with Telemetry.TenantAttribute,
// objup.tenant), a span with retry, resume and part events, and, with Telemetry.Logger, slog records of retries, resumes and waits.
// The global providers are used unless Telemetry.MeterProvider or
// Telemetry.TracerProvider say otherwise; while the program has set none, tracing
// costs nothing and metrics cost no allocation. UploadMany returns the per-item *Error values
// in each Result; its own error is an *Error for invalid input, the first
// failed item's *Error under StopOnError, and otherwise errors.Join of the
// failed items' *Error values.
package uploader
