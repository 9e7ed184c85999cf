// Package writes checks an object write as storage v2 does, for the fake
// GCS and the sink alike: each message's size, offset and CRC32C, the
// declared object size, the declared whole-object checksums, and the
// finish. Callers keep (or drop) the content; State keeps the count and
// the checksums. Appendable is the writer state of an appendable object
// (flushes, write handles, takeovers, redirects), the same for both.
package writes
