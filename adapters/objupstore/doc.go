// Package objupstore is an objstore.Bucket (github.com/thanos-io/objstore)
// for Google Cloud Storage whose uploads go through objup and whose reads,
// listings, attributes and deletes go to objstore's own GCS provider.
//
// It is for services that store through objstore (Thanos, Cortex, Mimir,
// Loki, Tempo): they keep their configuration (objstore's gcs.Config, YAML
// or struct) and swap one constructor:
//
//	bkt, err := objupstore.NewBucketWithConfig(ctx, logger, cfg, "ingester")
//
// # What goes where
//
// Upload writes through an uploader.Client (gRPC when cfg.UseGRPC is set, the
// JSON API otherwise): a pooled 256 KiB chunk per small object instead of
// the stock provider's 16 MiB buffer per writer, one request per object that
// fits in a chunk, per-bucket admission that learns the bucket's write rate
// from its 429s and makes uploads wait instead of fail, and retries that
// resume a large upload where the service left it. The object's content type
// is the one objstore.WithContentType gives, whatever cfg.ChunkSizeBytes is.
// The tenant is the one the context's header chain carries
// (header.WithTenant), or the one WithTenantFunc reads from the context, and
// rides on every request of the upload as x-scope-orgid.
//
// Everything else (Get, GetRange, Iter, IterWithAttributes, Exists,
// Attributes, Delete) is the stock provider's, made from the same config, so
// reads behave exactly as they did.
//
// # Configuration
//
// From gcs.Config: Bucket; ServiceAccount (credentials of both clients);
// UseGRPC (the transport of both); GRPCConnPoolSize (the connections of
// both); ChunkSizeBytes (objup's chunk size, rounded up to a multiple of
// 256 KiB within 256 KiB to 64 MiB; 0 keeps objup's 256 KiB); MaxRetries
// (the attempts of an upload too). HTTPConfig shapes the reads' HTTP
// transport only: objup's transports keep their own settings, which
// WithClientOptions can change. STORAGE_EMULATOR_HOST_GRPC and
// STORAGE_EMULATOR_HOST point both at an emulator.
//
// # Errors
//
// IsObjNotFoundErr and IsAccessDeniedErr know the stock provider's errors
// and objup's. An upload's error is objup's *uploader.Error (its predicates,
// errors.Is with fs.ErrNotExist and fs.ErrPermission, and status.FromError
// work) and also matches errors.As with a *googleapi.Error that carries the
// JSON API's HTTP status for its code (429, 503, 412, ...), which is what
// retry checks written for the official client look for.
//
// # What it does not do
//
// It does not read through objup (objup only uploads), it has no
// preconditions to offer because objstore's Upload asks for none, and it
// ignores HTTPConfig for uploads.
package objupstore
