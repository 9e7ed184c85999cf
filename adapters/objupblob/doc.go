// Package objupblob is a gocloud.dev/blob driver for Google Cloud Storage
// whose writers go through objup and whose other operations (reads, lists,
// attributes, copies, deletes, signed URLs) go to gcsblob, the Go CDK's own
// GCS driver.
//
// # Opening a bucket
//
// With a URL, after importing this package for its side effect:
//
//	import _ "github.com/objup/objup/adapters/objupblob"
//	b, err := blob.OpenBucket(ctx, "objup://my-bucket")            // gRPC uploads, JSON reads
//	b, err := blob.OpenBucket(ctx, "objup://my-bucket?transport=json")
//
// The scheme is Scheme ("objup"); the default opener uses Application
// Default Credentials (or, when STORAGE_EMULATOR_HOST_GRPC or
// STORAGE_EMULATOR_HOST is set, the emulator without credentials, as gcsblob
// does) and takes gcsblob's URL parameters for the reads. Or with a
// constructor, from a bucket gcsblob opened and an uploader.Client:
//
//	reads, err := gcsblob.OpenBucket(ctx, httpClient, "my-bucket", nil)
//	b := objupblob.OpenBucket(reads, uploads, "my-bucket", nil)
//
// # What a writer does
//
// NewWriter (and Upload, WriteAll) writes through objup: a pooled 256 KiB
// chunk per small object instead of a 16 MiB buffer per writer, one request
// per object that fits in a chunk, admission that waits out a bucket's 429s,
// resumable uploads resumed where the service left them. The content type
// (set or sniffed by the blob package), CacheControl, ContentDisposition,
// ContentEncoding, ContentLanguage, Metadata, ContentMD5 and IfNotExist are
// honoured; BufferSize sets objup's chunk size (rounded up to a multiple of
// 256 KiB, at most 64 MiB). Keys are escaped exactly as gcsblob escapes
// them, so objects written here read back through gcsblob under the same
// key, and the other way round. BeforeWrite's asFunc converts to
// **[]uploader.WriterOption: append to the slice to give the upload more of
// objup's options (they come before those the writer options imply).
//
// # Errors
//
// gcerrors.Code works on every error. ErrorAs gives objup's *uploader.Error
// for a writer's error, and gcsblob's types (*googleapi.Error, ...) for the
// others.
//
// # What it does not do
//
// It does not read through objup (objup only uploads).
// DisableContentTypeDetection cannot store an object without a content type:
// objup sniffs one when none is given, as the official client does by
// default. Writer's As offers no *storage.Writer or *storage.ObjectHandle:
// there is none.
package objupblob
