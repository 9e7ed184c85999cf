package objupstore

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc/codes"

	"github.com/go-kit/log"
	"github.com/thanos-io/objstore"
	"github.com/thanos-io/objstore/providers/gcs"
	"google.golang.org/api/option"
	"gopkg.in/yaml.v2"

	"github.com/objup/objup/header"
	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader"
)

// Bucket is an objstore.Bucket on one GCS bucket: uploads through objup,
// everything else through objstore's GCS provider. It is safe for
// concurrent use; Close releases both clients (not a client passed with
// WithClient).
type Bucket struct {
	reads  *gcs.Bucket
	up     *uploader.Client
	ownsUp bool
	name   string
	tenant func(context.Context) (string, bool)
}

var _ objstore.Bucket = (*Bucket)(nil)

// NewBucket returns a Bucket from objstore's GCS configuration in YAML, the
// bytes gcs.NewBucket takes, with gcs.DefaultConfig's defaults.
func NewBucket(ctx context.Context, logger log.Logger, conf []byte, component string, opts ...Option) (*Bucket, error) {
	cfg := gcs.DefaultConfig
	if err := yaml.UnmarshalStrict(conf, &cfg); err != nil {
		return nil, fmt.Errorf("objupstore: parse GCS config: %w", err)
	}
	return NewBucketWithConfig(ctx, logger, cfg, component, opts...)
}

// NewBucketWithConfig returns a Bucket from objstore's GCS configuration:
// the stock provider for the reads (gcs.NewBucketWithConfig with component)
// and an uploader.Client for the uploads (see the package doc for which
// fields it takes). It fails if either cannot be made, as the stock
// provider fails without credentials.
func NewBucketWithConfig(ctx context.Context, logger log.Logger, cfg gcs.Config, component string, opts ...Option) (*Bucket, error) {
	var c config
	for _, o := range opts {
		o.apply(&c)
	}
	reads, err := gcs.NewBucketWithConfig(ctx, logger, cfg, component, c.wrapReadsRT)
	if err != nil {
		return nil, err
	}
	b := &Bucket{reads: reads, up: c.client, name: cfg.Bucket, tenant: c.tenant}
	if b.up == nil {
		b.up, err = uploader.NewClient(ctx, append(clientOptions(cfg), c.clientOpts...)...)
		if err != nil {
			reads.Close()
			return nil, fmt.Errorf("objupstore: %w", err)
		}
		b.ownsUp = true
	}
	return b, nil
}

// clientOptions are the uploader options cfg implies.
func clientOptions(cfg gcs.Config) []option.ClientOption {
	var opts []option.ClientOption
	if !cfg.UseGRPC {
		opts = append(opts, uploader.WithHTTP())
	}
	if cfg.ServiceAccount != "" {
		// Any type of credentials JSON, as objstore's own provider takes it
		// (google.CredentialsFromJSON); the configuration is the operator's.
		//lint:ignore SA1019 WithAuthCredentialsJSON would refuse every type but the one named
		opts = append(opts, option.WithCredentialsJSON([]byte(cfg.ServiceAccount)))
	}
	if cfg.UseGRPC && cfg.GRPCConnPoolSize > 0 {
		opts = append(opts, option.WithGRPCConnectionPool(cfg.GRPCConnPoolSize))
	}
	if n := chunkSize(cfg.ChunkSizeBytes); n > 0 {
		opts = append(opts, uploader.WithChunkSize(n))
	}
	if cfg.MaxRetries > 0 {
		opts = append(opts, uploader.WithRetry(uploader.Retry{MaxAttempts: cfg.MaxRetries}))
	}
	return opts
}

// chunkSize is objup's chunk size for the stock provider's ChunkSizeBytes:
// 0 (objup's default) for 0 or less, else n rounded up to a multiple of
// 256 KiB, at most 64 MiB (the uploader's largest chunk).
func chunkSize(n int) int {
	if n <= 0 {
		return 0
	}
	return min((n+pool.Quantum-1)/pool.Quantum*pool.Quantum, 64<<20)
}

// Upload writes r to the object name through objup. The object is stored
// whole or not at all: when r fails or ctx ends, nothing is stored and the
// error says why. objstore.WithContentType sets the content type;
// without it, objup sniffs one as the official client does.
func (b *Bucket) Upload(ctx context.Context, name string, r io.Reader, opts ...objstore.ObjectUploadOption) error {
	if b.tenant != nil {
		if id, ok := b.tenant(ctx); ok {
			var err error
			if ctx, err = header.WithTenant(ctx, id); err != nil {
				return apiError(err)
			}
		}
	}
	var wopts []uploader.WriterOption
	if p := objstore.ApplyObjectUploadOptions(opts...); p.ContentType != "" {
		wopts = append(wopts, uploader.WithAttrs(uploader.ObjectAttrs{ContentType: p.ContentType}))
	}
	w, err := b.up.NewWriter(ctx, b.name, name, wopts...)
	if err != nil {
		return apiError(err)
	}
	if _, err := w.ReadFrom(r); err != nil {
		if cerr := w.CloseWithError(err); cerr != nil && !errors.Is(cerr, err) {
			err = errors.Join(err, cerr)
		}
		return apiError(err)
	}
	return apiError(w.Close())
}

// Delete removes the object name, through the stock provider.
func (b *Bucket) Delete(ctx context.Context, name string) error { return b.reads.Delete(ctx, name) }

// Name returns the bucket's name.
func (b *Bucket) Name() string { return b.name }

// Provider returns objstore.GCS.
func (b *Bucket) Provider() objstore.ObjProvider { return objstore.GCS }

// Iter calls f for each entry of dir, through the stock provider.
func (b *Bucket) Iter(ctx context.Context, dir string, f func(string) error, opts ...objstore.IterOption) error {
	return b.reads.Iter(ctx, dir, f, opts...)
}

// IterWithAttributes calls f for each entry of dir with the attributes the
// options ask for, through the stock provider.
func (b *Bucket) IterWithAttributes(ctx context.Context, dir string, f func(objstore.IterObjectAttributes) error, opts ...objstore.IterOption) error {
	return b.reads.IterWithAttributes(ctx, dir, f, opts...)
}

// SupportedIterOptions returns the stock provider's: Recursive and
// UpdatedAt.
func (b *Bucket) SupportedIterOptions() []objstore.IterOptionType {
	return b.reads.SupportedIterOptions()
}

// Get returns a reader of the object name, through the stock provider.
func (b *Bucket) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	return b.reads.Get(ctx, name)
}

// GetRange returns a reader of length bytes of the object name from off
// (length -1: to its end), through the stock provider.
func (b *Bucket) GetRange(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	return b.reads.GetRange(ctx, name, off, length)
}

// Exists reports whether the object name exists, through the stock
// provider.
func (b *Bucket) Exists(ctx context.Context, name string) (bool, error) {
	return b.reads.Exists(ctx, name)
}

// Attributes returns the size and modification time of the object name,
// through the stock provider.
func (b *Bucket) Attributes(ctx context.Context, name string) (objstore.ObjectAttributes, error) {
	return b.reads.Attributes(ctx, name)
}

// IsObjNotFoundErr reports whether err says an object or bucket does not
// exist: the stock provider's error or objup's.
func (b *Bucket) IsObjNotFoundErr(err error) bool {
	return b.reads.IsObjNotFoundErr(err) || uploader.CodeOf(err) == codes.NotFound
}

// IsAccessDeniedErr reports whether err says the credentials may not do
// what was asked: the stock provider's error or objup's.
func (b *Bucket) IsAccessDeniedErr(err error) bool {
	return b.reads.IsAccessDeniedErr(err) || uploader.CodeOf(err) == codes.PermissionDenied
}

// Close closes the reads' client and the uploads' client when the bucket
// made it.
func (b *Bucket) Close() error {
	err := b.reads.Close()
	if b.ownsUp {
		err = errors.Join(err, b.up.Close())
	}
	return err
}
