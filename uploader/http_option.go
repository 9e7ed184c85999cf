package uploader

import "google.golang.org/api/option"

// WithHTTP makes the client upload through the JSON API over HTTP instead of
// gRPC: the same Writer, Upload and UploadMany, buffers and options. An
// object that fits in a chunk goes out as one multipart request (metadata and
// media, streamed from the chunk); a larger one through a resumable session,
// one PUT per window of chunks, resumed from the persisted offset after a
// fault. Credentials and endpoints come from google.golang.org/api's HTTP
// transport (option.WithEndpoint takes the JSON API's base URL, such as
// "https://storage.googleapis.com/storage/v1/"), and STORAGE_EMULATOR_HOST is
// honoured as the official client honours it.
//
// Connections: over HTTPS the JSON API speaks HTTP/2, which carries many
// requests on a connection and opens more as they fill. An emulator named
// by STORAGE_EMULATOR_HOST speaks HTTP/1.1, one request per connection at a
// time, and the client keeps as many idle connections as it had requests
// in flight, so UploadMany at any concurrency reuses them. Another plain
// HTTP endpoint given with option.WithEndpoint gets google.golang.org/api's
// transport, which keeps 100 idle connections per host; pass
// option.WithHTTPClient with a transport of your own to keep more.
//
// The JSON API carries no per-request checksum: the whole object's CRC32C
// (and MD5, when asked) is sent with the last request, and the service
// verifies it.
func WithHTTP() option.ClientOption {
	return newClientOption(func(c *clientConfig) { c.http = true })
}
