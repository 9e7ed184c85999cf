package uploader

import (
	"context"
	"net/http"
	"time"

	"github.com/objup/objup/header"
	"github.com/objup/objup/internal/wire"
)

const (
	// maxMessage is the service's limit for the data of one write message.
	maxMessage = 2 << 20
	// requestParamsKey routes every RPC to the bucket.
	requestParamsKey = "x-goog-request-params"
)

// target is what every RPC of one upload shares: the connection and call
// options, the object, and the upload's context (with its header chain).
type target struct {
	c      *Client // its connection and call options
	ctx    context.Context
	bucket string
	object string
	params string // "bucket=projects/_/buckets/NAME"; params[len("bucket="):] is the resource name

	attempt attemptCtx // the context of the current unary attempt
}

func (t *target) resource() string { return t.params[len("bucket="):] }

// outgoing builds an RPC's context: the header chain and the routing header,
// flattened once.
func (t *target) outgoing(ctx context.Context) context.Context {
	return header.OutgoingContext(ctx, requestParamsKey, t.params)
}

// err wraps the error of op on the target's object.
func (t *target) err(op string, err error) *Error { return newError(op, t.bucket, t.object, err) }

// invoke makes one attempt of a unary call, bounded by timeout. It runs on
// the Writer's goroutine only.
func (t *target) invoke(method string, req, resp any, timeout time.Duration) error {
	t.attempt.arm(t.outgoing(t.ctx), timeout)
	err := t.c.conn.Invoke(&t.attempt, method, req, resp, t.c.callOpts...)
	t.attempt.disarm()
	return err
}

// spec builds the object's WriteObjectSpec. first is the start of the data, for
// content sniffing; size is the object's size, or -1 if unknown.
func (w *Writer) spec(first []byte, size int64) *wire.WriteObjectSpec {
	ct := w.cfg.contentType
	if ct == "" {
		if len(first) > 512 {
			first = first[:512]
		}
		ct = http.DetectContentType(first)
	}
	s := &w.scratch.spec
	s.Resource = &w.scratch.object
	*s.Resource = wire.Object{
		Name:               w.object,
		Bucket:             w.resource(),
		ContentType:        ct,
		ContentEncoding:    w.cfg.contentEncoding,
		ContentDisposition: w.cfg.contentDisposition,
		ContentLanguage:    w.cfg.contentLanguage,
		CacheControl:       w.cfg.cacheControl,
		StorageClass:       w.cfg.storageClass,
		Metadata:           w.cfg.metadata,
	}
	s.IfGenerationMatch = w.cfg.ifGenerationMatch
	s.IfGenerationNotMatch = w.cfg.ifGenerationNotMatch
	s.IfMetagenerationMatch = w.cfg.ifMetagenMatch
	s.IfMetagenerationNotMatch = w.cfg.ifMetagenNotMatch
	if size >= 0 {
		w.scratch.size = size
		s.ObjectSize = &w.scratch.size
	}
	return s
}

// checksums returns the whole-object checksums to send at finish_write.
func (w *Writer) checksums() *wire.ObjectChecksums {
	if w.cfg.noCRC32C && !w.cfg.md5 {
		return nil
	}
	cs := &w.scratch.checksums
	if !w.cfg.noCRC32C {
		w.scratch.crc = w.ch.CRC32C()
		cs.Crc32C = &w.scratch.crc
	}
	if w.cfg.md5 {
		cs.Md5Hash = w.ch.MD5()
	}
	return cs
}

// scratch holds the request messages of one upload inside the Writer, so a
// one-shot upload does not allocate each of them. They are built once and
// read-only once sent: a retried call sends them again.
type scratch struct {
	spec      wire.WriteObjectSpec
	object    wire.Object
	checksums wire.ObjectChecksums
	crc       uint32
	size      int64
	// The one-shot call's request and response.
	req   wire.WriteObjectRequest
	first wire.WriteObjectRequest_WriteObjectSpec
	resp  wire.WriteObjectResponse
}
