// Package deadline is the context of one attempt of a unary call: the
// call's context with the attempt's deadline, in a struct that is re-armed
// for each attempt instead of a context.WithTimeout per call.
//
// context.WithTimeout costs seven allocations and about 640 bytes per call
// once gRPC derives its own context from it, more than the rest of a small
// upload's client side together. An Attempt lives inside its owner (the
// uploader's Writer), its timer is made once, and the child gRPC derives
// with context.WithCancel registers through Attempt.AfterFunc (the method
// the context package looks for), so no goroutine watches it.
package deadline
