package uploader

import (
	"fmt"
	"time"

	"google.golang.org/api/option"
	"google.golang.org/api/option/internaloption"

	"github.com/objup/objup/pool"
)

// Client-wide options. They are option.ClientOption values, so they mix freely
// with the google.golang.org/api/option ones (credentials, endpoint, gRPC
// connection) in one NewClient call.

type clientConfig struct {
	alloc     pool.Allocator
	chunkSize int
	inFlight  int
	retry     RetryPolicy
}

// clientOption is implemented by objup's own client options. Embedding
// EmbeddableAdapter makes them option.ClientOption values that the transport
// ignores.
type clientOption interface {
	option.ClientOption
	applyClient(*clientConfig)
}

type clientOptionFunc struct {
	internaloption.EmbeddableAdapter
	f func(*clientConfig)
}

func (o *clientOptionFunc) applyClient(c *clientConfig) { o.f(c) }

func newClientOption(f func(*clientConfig)) option.ClientOption {
	return &clientOptionFunc{f: f}
}

// WithPool makes every Writer of the client take its chunk buffers from a (for
// instance a pool.Pool with a byte budget, or the caller's own Allocator). Its
// BufferSize must be a positive multiple of pool.Quantum. The default is
// pool.Default(), shared by the whole process.
func WithPool(a pool.Allocator) option.ClientOption {
	return newClientOption(func(c *clientConfig) { c.alloc = a })
}

// WithChunkSize sets the size of a chunk of a resumable upload: a positive
// multiple of pool.Quantum (256 KiB). Objects up to this size go out in one
// WriteObject call. The client then takes its buffers from a pool of its own with
// buffers of that size. Chunks larger than 2 MiB are sent as several messages
// without per-message CRC32C (the object's CRC32C still guards the upload).
// It cannot be combined with WithPool, whose BufferSize is the chunk size.
func WithChunkSize(n int) option.ClientOption {
	return newClientOption(func(c *clientConfig) { c.chunkSize = n })
}

// WithChunksInFlight bounds how many chunks of one upload may be sent and not
// yet acknowledged as persisted by the service: the memory of one upload is at
// most n+1 chunks. The default is 4.
func WithChunksInFlight(n int) option.ClientOption {
	return newClientOption(func(c *clientConfig) { c.inFlight = n })
}

// WithRetry sets the client's retry policy. See RetryPolicy.
func WithRetry(p RetryPolicy) option.ClientOption {
	return newClientOption(func(c *clientConfig) { c.retry = p })
}

// Idempotency says which one-shot uploads may be retried as a whole.
type Idempotency int

const (
	// RetryIdempotent retries a one-shot upload only when a precondition
	// (WithDoesNotExist, WithGenerationMatch) makes it idempotent, as the
	// official client does by default. Resumable uploads are always retried: a
	// session resumes where the service left off.
	RetryIdempotent Idempotency = iota
	// RetryAlways retries every upload, including unconditional one-shot ones (a
	// retried one-shot upload may then overwrite a concurrent writer's object).
	RetryAlways
	// RetryNever never retries.
	RetryNever
)

// RetryPolicy controls retries of transient failures (UNAVAILABLE,
// RESOURCE_EXHAUSTED, INTERNAL, ABORTED, a broken stream, a chunk that saw no
// progress within ChunkTimeout): exponential backoff with full jitter, bounded by
// MaxElapsed per failure episode. Zero fields take their defaults.
type RetryPolicy struct {
	// Initial is the first backoff (default 100ms).
	Initial time.Duration
	// Max caps one backoff (default 5s).
	Max time.Duration
	// Multiplier grows the backoff (default 2).
	Multiplier float64
	// MaxElapsed bounds the time spent retrying since the last progress
	// (default 32s, as the official client's ChunkRetryDeadline).
	MaxElapsed time.Duration
	// ChunkTimeout is how long a resumable upload waits for the service to
	// acknowledge a sent chunk before it treats the stream as broken and
	// resumes (default 32s). Negative disables it.
	ChunkTimeout time.Duration
	// Idempotency selects which one-shot uploads are retried.
	Idempotency Idempotency
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Initial <= 0 {
		p.Initial = 100 * time.Millisecond
	}
	if p.Max <= 0 {
		p.Max = 5 * time.Second
	}
	if p.Multiplier < 1 {
		p.Multiplier = 2
	}
	if p.MaxElapsed <= 0 {
		p.MaxElapsed = 32 * time.Second
	}
	if p.ChunkTimeout == 0 {
		p.ChunkTimeout = 32 * time.Second
	}
	return p
}

// WriterOption configures one Writer (NewWriter, Upload, Item.Options).
type WriterOption interface {
	applyWriter(*writerConfig) error
}

type writerOptionFunc func(*writerConfig) error

func (f writerOptionFunc) applyWriter(c *writerConfig) error { return f(c) }

type writerConfig struct {
	contentType        string
	contentEncoding    string
	contentDisposition string
	contentLanguage    string
	cacheControl       string
	storageClass       string
	metadata           map[string]string
	ifGenerationMatch  *int64
	ifMetagenMatch     *int64
	noCRC32C           bool
	md5                bool
	progress           func(int64)
	buffer             []byte
	hasBuffer          bool
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
// IsPreconditionFailed) if the object already exists. It makes the upload
// idempotent, so a one-shot upload is retried under RetryIdempotent.
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
