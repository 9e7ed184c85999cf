// Package mode holds the ways an upload's chunks reach the service, each
// owning its state: OneShot (one WriteObject call), the resumable session
// (a bounded window of chunks in flight that resumes after faults from
// the persisted size and settles its outcome through the session's id),
// Append (an appendable object's stream, which flushes and is taken
// over), and the parallel composite upload (parts as sessions of their
// own, composed, their temporary objects deleted). Every mode is a Mode;
// those that take full chunks are Streaming, and Append is a Flusher. A
// mode reaches the service through an xfer.Transport and the retry
// engine, never through a transport's package, and is given everything
// else once, in Params: fixed values, and the Buffers and Services it
// calls.
package mode
