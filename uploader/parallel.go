package uploader

import (
	"errors"
	"fmt"

	"github.com/objup/objup/uploader/internal/mode"
	"github.com/objup/objup/uploader/internal/names"
)

// defaultTempPrefix starts the names of a parallel upload's temporary
// objects (see ParallelUpload).
const defaultTempPrefix = "objup-tmp/"

// ParallelUpload configures a parallel composite upload (see
// WithParallelUpload). The zero value takes every default.
type ParallelUpload struct {
	// PartSize is the size of each part, rounded up to whole chunks
	// (0: 6 MiB). An object of at most one part is written in
	// one call under its own name: no temporary object, no compose.
	PartSize int64
	// Parts is how many parts upload at once (0: two per connection of the
	// client's pool, at least 4). A part holds its memory until the service
	// stored it, so up to Parts+1 parts of memory are in use at once,
	// within the client's pool budget.
	Parts int
	// TempPrefix starts the names of the temporary objects (default
	// "objup-tmp/"). An upload's parts are named
	// TempPrefix + a random id + "/part-N", the objects of intermediate
	// composes TempPrefix + id + "/compose-R-N". A multipart upload has
	// none.
	TempPrefix string
	// Method is how the parts become one object: ViaMultipart or
	// ViaCompose. The zero value, the default, is ViaMultipart, except
	// for a Writer with preconditions (WithConditions: the XML API's
	// multipart upload takes none), an ACL list, a hold, a retention or
	// contexts (its initiate cannot carry them), parts under 5 MiB, or a
	// gRPC client with no XML endpoint (one dialled to an emulator
	// without STORAGE_EMULATOR_HOST or WithXMLEndpoint): those take
	// ViaCompose. It was chosen from measurements: see the README's
	// Parallel uploads section.
	Method ParallelMethod
}

// ParallelMethod is how a parallel upload's parts become one object.
type ParallelMethod int

const (
	// ViaMultipart uploads the parts through the XML API's multipart
	// upload (see WithParallelUpload).
	ViaMultipart ParallelMethod = iota + 1
	// ViaCompose uploads the parts as temporary objects and composes
	// them (see WithParallelUpload).
	ViaCompose
)

// viaDefault is the zero ParallelMethod: see ParallelUpload.Method.
const viaDefault ParallelMethod = 0

// WithParallelUpload uploads the object in parts, several at once, when it
// outgrows one part, by one of two methods (ParallelUpload.Method).
//
// ViaMultipart, the default, takes GCS's XML API multipart upload: the
// Writer cuts the data into parts of PartSize (at least 5 MiB; the size
// doubles every 1,000 parts, so 10,000 parts hold the largest object),
// initiates the upload with the object's attributes, PUTs the parts with
// their CRC32C (which the service checks), Parts at once over the client's
// connections, and completes the upload: one object write, no temporary
// object. The service's answer to the complete carries the object's
// CRC32C, checked against what was written. A gRPC client sends these
// calls over HTTPS with its own credentials (see WithXMLEndpoint); a
// client made WithHTTP over its JSON API's connections. It needs
// storage.objects.create and the storage.multipartUploads permissions
// that roles/storage.objectCreator holds: an uploader's usual credential
// makes one. When the upload fails or its context ends, it is aborted
// (the service drops its parts), in the background as a composite upload's
// cleanup is. What settles a call whose answer was lost: an initiate is
// repeated, and the cleanup aborts the empty uploads of the object that
// began while it was (where the credential may list them,
// storage.multipartUploads.list); a part is repeated (a part number sent
// again replaces the part); a complete is repeated, and once an answer was
// lost a NotFound means the lost one completed the upload; a complete
// whose every attempt failed is settled by an abort (NotFound: it
// completed; done: nothing is stored; NotFound after an abort whose own
// answer was lost: the live object, if it holds what was written), so the
// outcome is unknown only when the service cannot be reached at all, or
// when that last case finds no such object. GCS takes no preconditions on this
// path, and its initiate no ACL list, hold, retention or contexts: asked
// for ViaMultipart, those are refused at once; by default they take
// ViaCompose. The object, like a composite one, has a CRC32C and no MD5.
// A parallel upload's resume handle (Writer.Handle) names the upload id
// and the parts stored, with their ETags: Client.Resume continues it in
// another process, Client.Discard aborts it.
//
// ViaCompose is the parallel composite upload: the Writer cuts the data
// into parts of PartSize, uploads each part as a temporary object of the same bucket on
// its own stream (spread over the client's connections, Parts at once),
// joins them with ComposeObject (in rounds of at most 32), checks the final
// object's size and CRC32C against what was written, and deletes the
// temporary objects, whatever the outcome. Close returns once they are
// deleted, or, once the upload's context ended, at most about a second
// later, leaving the rest to the background: Client.Close waits for it.
// When the upload fails or its context ends, no part starts, and a part
// whose last request is already out is awaited (bounded by the attempt
// timeout) rather than abandoned: the service could store such a part
// after a delete had found nothing; its memory goes back to the pool then.
// A part whose last answer was lost (the service may have been committing
// it when the connection broke) is deleted once more a second later. A
// part's name is under a prefix of the upload's own, so a part whose
// answer was lost and whose retry meets a part there (412) is the upload's
// own, looked up, not failed. The final object gets the Writer's
// attributes and preconditions; it is never visible partially.
//
// A part whose answer was lost may still be stored by the service after
// the upload deleted what it found (a request a front end read whole, a
// commit that takes longer than the attempt timeout and the cleanup's
// second pass): no client can take that back, and such a part stays under
// TempPrefix. Give the bucket a lifecycle rule that deletes objects under
// TempPrefix after a day. A parallel upload needs storage.objects.get
// (compose reads its sources, and a lost answer is looked up) and
// storage.objects.delete beside storage.objects.create: a credential with
// roles/storage.objectCreator alone cannot make one, and the upload says so
// before its first part goes out (a delete of a name under its prefix,
// which does not exist, is refused).
//
// A parallel upload costs, for an object of N parts: N writes, about
// N/31+1 composes and N+N/32 deletes, instead of one upload (operations
// are billed, class A for writes and composes). The result is a composite
// object: it has a CRC32C but no MD5 (so experimental.WithMD5 and WithSendMD5 are
// refused, and so is experimental.WithoutCRC32C, since the CRC32C is what checks the
// result), and readers that need an MD5 (gsutil's default download check,
// for one) must use the CRC32C. The temporary objects take the bucket's
// default storage class, so a bucket whose default is Nearline, Coldline
// or Archive bills their minimum storage duration, and a bucket with a
// retention policy or default event-based hold keeps them until it
// expires: give such buckets' temporary objects a prefix that a lifecycle
// rule deletes, or do not use parallel uploads there. A part that fails
// for good fails the upload with that part's cause. WithBuffer is
// refused: parts take their memory from the client's pool.
func WithParallelUpload(p ParallelUpload) WriterOption {
	return writerOptionFunc(func(c *writerConfig) {
		c.parallel = &mode.Parallel{PartSize: p.PartSize, Parts: p.Parts, TempPrefix: p.TempPrefix, Method: int(p.Method)}
	})
}

// checkParallel checks a parallel upload's settings, refuses the options
// it cannot honour, and makes its state.
func (c *writerConfig) checkParallel() error {
	if c.parallel == nil {
		return nil
	}
	p := c.parallel
	method := ParallelMethod(p.Method)
	switch {
	case p.PartSize < 0:
		return fmt.Errorf("WithParallelUpload: part size %d is negative", p.PartSize)
	case p.Parts < 0:
		return fmt.Errorf("WithParallelUpload: parts %d is negative", p.Parts)
	case method < viaDefault || method > ViaCompose:
		return fmt.Errorf("WithParallelUpload: unknown method %d", method)
	case c.hasBuffer:
		return errors.New("WithParallelUpload and WithBuffer exclude each other: parts take their memory from the client's pool")
	case c.knob.MD5 || c.sendMD5 != nil:
		return errors.New("WithParallelUpload cannot send an MD5: a composed object has none")
	case c.knob.NoCRC32C:
		return errors.New("WithParallelUpload needs the CRC32C that WithoutCRC32C turns off: it checks the composed object")
	}
	if p.TempPrefix == "" {
		p.TempPrefix = defaultTempPrefix
	}
	if err := names.Object(p.TempPrefix + "0123456789abcdef/compose-99-9999"); err != nil {
		return fmt.Errorf("WithParallelUpload: temporary prefix %q: %w", p.TempPrefix, err)
	}
	why := c.noMultipart()
	switch {
	case method == ViaMultipart && why != "":
		return fmt.Errorf("WithParallelUpload: the XML API's multipart upload cannot take %s; use ViaCompose", why)
	case method == ViaMultipart && p.PartSize != 0 && p.PartSize < mode.MinMultipartPart:
		return fmt.Errorf("WithParallelUpload: a multipart upload's parts are at least %d bytes, not %d", mode.MinMultipartPart, p.PartSize)
	case method == viaDefault && (why != "" || p.PartSize != 0 && p.PartSize < mode.MinMultipartPart):
		p.Method = int(ViaCompose)
	}
	return nil
}

// useMultipart gives a parallel upload of ViaMultipart, or ViaDefault, the
// client's XML API: a client that has none fails the first and makes the
// second ViaCompose.
func (w *Writer) useMultipart() error {
	p := w.cfg.parallel
	if p == nil || ParallelMethod(p.Method) == ViaCompose {
		return nil
	}
	xml, err := w.client().multipart()
	switch {
	case err != nil && ParallelMethod(p.Method) == ViaMultipart:
		return fmt.Errorf("WithParallelUpload: %w", err)
	case err != nil:
		p.Method = int(ViaCompose)
		return nil
	}
	p.Method, p.XML = int(ViaMultipart), xml
	return nil
}

// noMultipart says what of the Writer's the XML API's multipart upload
// cannot carry: preconditions (GCS takes none on that path), and the
// attributes its initiate has no header for; "" if none.
func (c *writerConfig) noMultipart() string {
	o := c.obj
	switch {
	case c.conds != 0 || c.spec.IfGenerationMatch != nil || c.spec.IfGenerationNotMatch != nil ||
		c.spec.IfMetagenerationMatch != nil || c.spec.IfMetagenerationNotMatch != nil:
		return "preconditions (WithConditions)"
	case o == nil:
		return ""
	case len(o.GetAcl()) > 0:
		return "an ACL list (use PredefinedACL)"
	case o.GetTemporaryHold() || o.EventBasedHold != nil:
		return "a hold"
	case o.GetRetention() != nil:
		return "a retention"
	case o.GetContexts() != nil:
		return "contexts"
	}
	return ""
}
