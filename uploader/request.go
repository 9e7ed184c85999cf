package uploader

import (
	"context"
	"net/http"

	"github.com/objup/objup/header"
	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/deadline"
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
	c      *Client // its connection and call options
	Ctx    context.Context
	Bucket string
	Object string
	Params string // "bucket=projects/_/buckets/NAME"; params[len("bucket="):] is the resource name

	Attempt deadline.Attempt // the context of the current unary attempt
}

func (t *Target) Resource() string { return t.Params[len("bucket="):] }

// Outgoing builds an RPC's context: the header chain and the routing header,
// flattened once.
func (t *Target) Outgoing(ctx context.Context) context.Context {
	return header.OutgoingContext(ctx, RequestParamsKey, t.Params)
}

// err wraps the error of op on the target's object.
func (t *Target) err(op string, err error) *Error { return newError(op, t.Bucket, t.Object, err) }

// spec completes the object's WriteObjectSpec, which the options filled:
// the name and bucket, the content type (sniffed from first, the start of the
// data, when no option set one) and the size, or -1 if unknown.
func (w *Writer) spec(first []byte, size int64) *wire.WriteObjectSpec {
	s := &w.Scratch.Spec
	o := s.Resource
	o.Name, o.Bucket = w.Object, w.Resource()
	if o.ContentType == "" {
		if len(first) > 512 {
			first = first[:512]
		}
		o.ContentType = http.DetectContentType(first)
	}
	if size >= 0 {
		w.Scratch.Size = size
		s.ObjectSize = &w.Scratch.Size
	}
	return s
}

// checksums returns the whole-object checksums to send at finish_write: the
// caller's (WithSendCRC32C, WithSendMD5), else those computed while writing.
func (w *Writer) checksums() *wire.ObjectChecksums {
	cfg := &w.cfg
	hasCRC := cfg.hasCRC || !cfg.knob.NoCRC32C
	if !hasCRC && !cfg.knob.MD5 && cfg.sendMD5 == nil {
		return nil
	}
	cs := &w.Scratch.Checksums
	if hasCRC {
		w.Scratch.CRC = w.ch.CRC32C()
		if cfg.hasCRC {
			w.Scratch.CRC = cfg.sendCRC
		}
		cs.Crc32C = &w.Scratch.CRC
	}
	switch {
	case cfg.sendMD5 != nil:
		cs.Md5Hash = cfg.sendMD5[:]
	case cfg.knob.MD5:
		cs.Md5Hash = w.ch.MD5()
	}
	return cs
}

// AttemptCtx is the context of one attempt's call: the upload's, except
// for a parallel upload's intermediate composes. Once such a request may
// have left, the call is not cancelled with the upload: it runs to its
// answer, bounded by its timeout, so the upload knows whether the object
// exists and deletes it. Cancelled, the service could still store the
// object after the upload's delete had found nothing. (The parts are
// sessions, which a cancel settles: see parallel.send.) The upload's call
// does not wait for it: the cleanup runs in the background (see
// parallel.close).
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
	HasSums   bool // checksums holds the whole-object checksums the finish carries (see upload.checksums)
	Settle    bool // a parallel upload's intermediate compose: see upload.attemptCtx
	Refused   bool // the service refused a write of the upload for load: its retries wait for their turn
	Size      int64
	// The one-shot call's request and response.
	Req   wire.WriteObjectRequest
	First wire.WriteObjectRequest_WriteObjectSpec
	Resp  wire.WriteObjectResponse
}
