// Package uploader is objup's public SDK: a client that uploads objects to
// Google Cloud Storage over its gRPC API (google.storage.v2), built for services
// that write huge numbers of small objects for many tenants.
//
// # Uploading
//
// A Client is created once with NewClient and shared. Writer (from
// Client.NewWriter) is an io.WriteCloser and io.ReaderFrom for one object;
// Client.Upload writes one io.Reader; Client.UploadMany uploads many items with
// bounded concurrency.
//
// An object that fits in one chunk (256 KiB by default) goes out in exactly one
// WriteObject call carrying spec, data and CRC32C: no resumable session, no extra
// round trip, no goroutine. Larger objects stream through a resumable session
// (StartResumableWrite, then BidiWriteObject) with a bounded number of chunks in
// flight; after a transient failure the Writer asks QueryWriteStatus and resumes
// where the service left off. An object is stored only when Close returns nil:
// a failed or cancelled upload leaves nothing behind.
//
// # Memory
//
// Chunks come from a pool.Allocator: pool.Default() unless WithPool says
// otherwise (a pool.Pool with a byte budget gives the process a memory ceiling).
// WithBuffer lends the Writer the caller's own buffer instead. A chunk is never
// copied on its way to the network: gRPC sends it in place, and it goes back to
// its allocator only after gRPC let go of it and the service acknowledged it.
//
// # Tenants and headers
//
// Headers added to the context with the header package (header.WithTenant,
// header.Append) travel with every RPC of an upload, flattened once per RPC
// together with the x-goog-request-params routing header.
//
// # Errors
//
// Every error is an *Error with a gRPC code and the cause; the predicates
// IsPreconditionFailed, IsNotFound, IsPermissionDenied, IsInvalidArgument and
// IsDataLoss classify it, and status.FromError gives the service's status.
// Invalid names, options or buffers are reported by NewWriter and UploadMany
// before anything is sent.
package uploader
