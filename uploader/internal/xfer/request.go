package xfer

import (
	"context"

	"github.com/objup/objup/header"
	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/deadline"
	"github.com/objup/objup/uploader/internal/retry"
)

const (
	// MaxMessage is the service's limit for the data of one write message.
	MaxMessage = 2 << 20
	// RequestParamsKey routes every RPC to the bucket.
	RequestParamsKey = "x-goog-request-params"
)

// Target is what every RPC of one upload shares: the connection and call
// options, the object, and the upload's context (with its header chain).
type Target struct {
	Ctx    context.Context
	Bucket string
	Object string
	Params string // "bucket=projects/_/buckets/NAME"; params[len("bucket="):] is the resource name
}

func (t *Target) Resource() string { return t.Params[len("bucket="):] }

// Outgoing builds an RPC's context: the header chain and the routing header,
// flattened once.
func (t *Target) Outgoing(ctx context.Context) context.Context {
	return header.OutgoingContext(ctx, RequestParamsKey, t.Params)
}

// AttemptCtx is the context of one attempt's call: the upload's, except
// for a parallel upload's intermediate composes. Once such a request may
// have left, the call is not cancelled with the upload: it runs to its
// answer, bounded by its timeout, so the upload knows whether the object
// exists and deletes it. Cancelled, the service could still store the
// object after the upload's delete had found nothing. (The parts are
// sessions, which a cancel settles: see the parallel mode in package mode.) The upload's call
// does not wait for it: the cleanup runs in the background (see
// the parallel mode's Close).
func (u *Request) AttemptCtx() context.Context {
	if u.Scratch.Settle {
		return context.WithoutCancel(u.Ctx)
	}
	return u.Ctx
}

// Scratch holds the request messages of one upload inside the Writer, so a
// one-shot upload does not allocate each of them. They are built once and
// read-only once sent: a retried call sends them again.
type Scratch struct {
	Spec      wire.WriteObjectSpec
	Object    wire.Object
	Checksums wire.ObjectChecksums
	CRC       uint32
	NoCRC     bool // messages carry no CRC32C (WithoutCRC32C); here, where it costs no room
	HasSums   bool // checksums holds the whole-object checksums the finish carries (see [Request.Checksums])
	Settle    bool // a parallel upload's intermediate compose: see [Request.AttemptCtx]
	Refused   bool // the service refused a write of the upload for load: its retries wait for their turn
	Size      int64
}

// Call is the memory a Request lends its transport for one call at a
// time, so that a one-shot upload allocates no message and no attempt
// context: the one part of a Request a transport writes (beside the
// references it takes on chunks, see Lifetime). What the request says
// (its target, spec, checksums, an appendable object's state) only the
// Writer and its mode write.
type Call struct {
	Attempt deadline.Attempt // the context of the current unary attempt
	// The one-shot call's request and response.
	Req   wire.WriteObjectRequest
	First wire.WriteObjectRequest_WriteObjectSpec
	Resp  wire.WriteObjectResponse
}

// NoteRefusal takes in the outcome, err, of an attempt of a write of u
// (WriteObject, StartUpload, ComposeObject, DeleteObject): once the service
// refused one for load, the upload's retries wait for their turn
// (Scratch.Refused). The caller of the write notes it, not the transport.
func (u *Request) NoteRefusal(err error) {
	if err != nil && retry.IsPushback(err) {
		u.Scratch.Refused = true
	}
}

// Detached returns an upload to the same object in ctx, for calls made
// apart from u's own (a look-up, a cleanup): they share none of u's call
// state, so they may run on another goroutine or after u's call returned.
func (u *Request) Detached(ctx context.Context) *Request {
	return &Request{Target: Target{Ctx: ctx, Bucket: u.Bucket, Object: u.Object, Params: u.Params}}
}
