package uploader

import "fmt"

// WriterOption configures one Writer (NewWriter, Upload, Item.Options).
type WriterOption interface {
	applyWriter(*writerConfig) error
}

type writerOptionFunc func(*writerConfig) error

func (f writerOptionFunc) applyWriter(c *writerConfig) error { return f(c) }

type writerConfig struct {
	contentType          string
	contentEncoding      string
	contentDisposition   string
	contentLanguage      string
	cacheControl         string
	storageClass         string
	metadata             map[string]string
	ifGenerationMatch    *int64
	ifGenerationNotMatch *int64
	ifMetagenMatch       *int64
	ifMetagenNotMatch    *int64
	progress             func(int64)
	buffer               []byte
	chunkSize            int
	retry                *retryConfig // the client's, until a WithRetry of the Writer's own
	noCRC32C             bool
	md5                  bool
	hasBuffer            bool
	ownRetry             bool
}

// WithContentType sets the object's Content-Type. Without it, the type is
// sniffed from the first 512 bytes with http.DetectContentType, as the official
// client does.
func WithContentType(t string) WriterOption {
	return writerOptionFunc(func(c *writerConfig) error { c.contentType = t; return nil })
}

// WithContentEncoding sets the object's Content-Encoding (e.g. "gzip").
func WithContentEncoding(e string) WriterOption {
	return writerOptionFunc(func(c *writerConfig) error { c.contentEncoding = e; return nil })
}

// WithContentDisposition sets the object's Content-Disposition.
func WithContentDisposition(d string) WriterOption {
	return writerOptionFunc(func(c *writerConfig) error { c.contentDisposition = d; return nil })
}

// WithContentLanguage sets the object's Content-Language.
func WithContentLanguage(l string) WriterOption {
	return writerOptionFunc(func(c *writerConfig) error { c.contentLanguage = l; return nil })
}

// WithCacheControl sets the object's Cache-Control.
func WithCacheControl(cc string) WriterOption {
	return writerOptionFunc(func(c *writerConfig) error { c.cacheControl = cc; return nil })
}

// WithStorageClass sets the object's storage class (e.g. "NEARLINE"); empty
// means the bucket's default.
func WithStorageClass(class string) WriterOption {
	return writerOptionFunc(func(c *writerConfig) error { c.storageClass = class; return nil })
}

// WithMetadata sets the object's custom metadata. The map is read when the
// option is applied (NewWriter), not kept.
func WithMetadata(md map[string]string) WriterOption {
	return writerOptionFunc(func(c *writerConfig) error {
		for k, v := range md {
			if k == "" {
				return fmt.Errorf("metadata has an empty key")
			}
			if c.metadata == nil {
				c.metadata = make(map[string]string, len(md))
			}
			c.metadata[k] = v
		}
		return nil
	})
}

// WithDoesNotExist makes the upload fail with a precondition error (see
// IsPreconditionFailed) if the object already exists. Like every
// precondition, it makes the upload idempotent, so a one-shot upload is
// retried under RetryIdempotent.
func WithDoesNotExist() WriterOption {
	return WithGenerationMatch(0)
}

// WithGenerationMatch makes the upload succeed only if the object's live
// generation is gen (0: the object must not exist).
func WithGenerationMatch(gen int64) WriterOption {
	return writerOptionFunc(func(c *writerConfig) error {
		if gen < 0 {
			return fmt.Errorf("generation %d is negative", gen)
		}
		c.ifGenerationMatch = &gen
		return nil
	})
}

// WithGenerationNotMatch makes the upload succeed only if the object's live
// generation is not gen (0: the object must exist).
func WithGenerationNotMatch(gen int64) WriterOption {
	return writerOptionFunc(func(c *writerConfig) error {
		if gen < 0 {
			return fmt.Errorf("generation %d is negative", gen)
		}
		c.ifGenerationNotMatch = &gen
		return nil
	})
}

// WithMetagenerationMatch makes the upload succeed only if the object's live
// metageneration is mg.
func WithMetagenerationMatch(mg int64) WriterOption {
	return writerOptionFunc(func(c *writerConfig) error {
		if mg <= 0 {
			return fmt.Errorf("metageneration %d must be positive", mg)
		}
		c.ifMetagenMatch = &mg
		return nil
	})
}

// WithMetagenerationNotMatch makes the upload succeed only if the object's
// live metageneration is not mg.
func WithMetagenerationNotMatch(mg int64) WriterOption {
	return writerOptionFunc(func(c *writerConfig) error {
		if mg <= 0 {
			return fmt.Errorf("metageneration %d must be positive", mg)
		}
		c.ifMetagenNotMatch = &mg
		return nil
	})
}

// WithoutCRC32C stops sending CRC32C checksums (per message and for the whole
// object). They are sent by default and cost one pass over the data.
func WithoutCRC32C() WriterOption {
	return writerOptionFunc(func(c *writerConfig) error { c.noCRC32C = true; return nil })
}

// WithMD5 computes the object's MD5 while writing and sends it with the last
// message, so the service verifies it too. It costs a second pass over the data.
func WithMD5() WriterOption {
	return writerOptionFunc(func(c *writerConfig) error { c.md5 = true; return nil })
}

// WithProgress calls f with the number of bytes the service has acknowledged,
// after each acknowledged chunk and once at the end with the object's size. f
// runs on the Writer's goroutines and must not block.
func WithProgress(f func(persisted int64)) WriterOption {
	return writerOptionFunc(func(c *writerConfig) error { c.progress = f; return nil })
}

// WithBuffer makes the Writer use buf, the caller's memory, for its chunks
// instead of the client's pool (caller-managed pooling).
//
// A buffer of at least pool.Quantum (256 KiB) is cut into slots of one quantum,
// so an upload of any size works and keeps at most len(buf)/Quantum chunks in
// flight. A smaller buffer serves objects that fit in it, sent in one call; an
// object that outgrows it fails with an InvalidArgument error, and nothing is
// stored.
//
// The Writer owns buf from NewWriter until Close (or CloseWithError) returns,
// and never touches it afterwards, whatever the outcome: the caller may then
// reuse it, for instance for the next Writer.
func WithBuffer(buf []byte) WriterOption {
	return writerOptionFunc(func(c *writerConfig) error {
		if len(buf) == 0 {
			return fmt.Errorf("WithBuffer: buffer is nil or empty")
		}
		c.buffer = buf
		c.hasBuffer = true
		return nil
	})
}
