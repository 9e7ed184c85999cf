// Package experimental holds the knobs of the uploader's machinery: the
// window of a resumable upload, gRPC keepalive and connection opening, the
// admission stage, extra checksum passes, the client's allocator. The
// defaults suit GCS; these settings exist for measurements, tests and
// unusual paths, and may change or go away without notice. Everything a
// service needs to upload is in package uploader.
package experimental
