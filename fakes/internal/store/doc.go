// Package store is the fake GCS's object store, shared by its gRPC and
// JSON fronts: buckets, each with a map of its live objects and an ordered
// index of every stored generation, and the registry of resumable upload
// sessions. A store in memory (New) keeps them in maps and B-trees; a store
// on disk (Open) in a Pebble database and files (see disk.go).
//
// The store is sealed: every write goes through its methods (Put,
// PutAppendable, ReplaceAppendable, Compose, Update, Remove, and the
// bucket methods of Store), which check the preconditions, set the
// generation, the metageneration and the times, and keep the per-tenant
// usage, under the bucket's lock. A stored Object is never modified; a
// metadata update or a retired live generation stores a changed copy that
// shares the content. So readers hold an *Object without a lock and read
// it through its methods.
//
// The store's errors (Error) carry their gRPC code, HTTP status and JSON
// reason, so that they read right on either API.
package store
