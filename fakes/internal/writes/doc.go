// Package writes checks an object write as storage v2 does, for the fake
// GCS and the sink alike: each message's size, offset and CRC32C, the
// declared object size, the declared whole-object checksums, and the
// finish. Callers keep (or drop) the content; State keeps the count and
// the checksums. Appendable is the writer state of an appendable object
// (flushes, write handles, takeovers, redirects), the same for both.
// Engine is the state machine of a write stream built on them, which both
// servers run: each gives it an Upload (its state of one write) and a
// Stream (what it does with a message's bytes, and how it commits the
// finished object).
package writes
