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
	// composes TempPrefix + id + "/compose-R-N".
	TempPrefix string
}

// WithParallelUpload uploads the object as a parallel composite upload
// when it outgrows one part: the Writer cuts the data into parts of
// PartSize, uploads each part as a temporary object of the same bucket on
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
// roles/storage.objectCreator alone cannot make one.
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
		c.parallel = &mode.Parallel{PartSize: p.PartSize, Parts: p.Parts, TempPrefix: p.TempPrefix}
	})
}

// checkParallel checks a parallel upload's settings, refuses the options
// it cannot honour, and makes its state.
func (c *writerConfig) checkParallel() error {
	if c.parallel == nil {
		return nil
	}
	p := c.parallel
	switch {
	case p.PartSize < 0:
		return fmt.Errorf("WithParallelUpload: part size %d is negative", p.PartSize)
	case p.Parts < 0:
		return fmt.Errorf("WithParallelUpload: parts %d is negative", p.Parts)
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
	return nil
}
