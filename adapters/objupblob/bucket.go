package objupblob

import (
	"context"
	"errors"
	"fmt"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"
	"google.golang.org/grpc/codes"

	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader"
)

// Options configures a bucket opened with OpenBucket.
type Options struct {
	// WriterOptions are given to every upload, before those a writer's own
	// options imply (content type, preconditions), which win.
	WriterOptions []uploader.WriterOption
}

// OpenBucket returns a bucket on the GCS bucket name whose writers upload
// through uploads and whose other operations go to reads, a bucket gcsblob
// opened on the same GCS bucket (over JSON, or over gRPC with
// gcsblob.Options.Client). The caller closes reads and uploads after the
// returned bucket.
func OpenBucket(reads *blob.Bucket, uploads *uploader.Client, name string, opts *Options) *blob.Bucket {
	return blob.NewBucket(openBucket(reads, uploads, name, opts))
}

// bucket is the driver: gcsblob's portable bucket for everything but
// writers, objup for writers.
type bucket struct {
	reads   *blob.Bucket
	uploads *uploader.Client
	name    string
	opts    Options
	// closeReads and closeUploads say which of its clients Close closes:
	// those the URL opener made for it.
	closeReads, closeUploads bool
}

var _ driver.Bucket = (*bucket)(nil)

func openBucket(reads *blob.Bucket, uploads *uploader.Client, name string, opts *Options) *bucket {
	if reads == nil || uploads == nil || name == "" {
		panic("objupblob: OpenBucket needs a reads bucket, an uploader.Client and a bucket name")
	}
	b := &bucket{reads: reads, uploads: uploads, name: name}
	if opts != nil {
		b.opts = *opts
	}
	return b
}

// ErrorCode returns the code of err: objup's code for a writer's error,
// the code gcsblob gave any other.
func (b *bucket) ErrorCode(err error) gcerrors.ErrorCode {
	var ue *uploader.Error
	if errors.As(err, &ue) {
		return errorCode(ue.Code)
	}
	return gcerrors.Code(err)
}

// errorCode maps objup's gRPC codes to the Go CDK's, as gcsblob maps the
// service's answers.
func errorCode(c codes.Code) gcerrors.ErrorCode {
	switch c {
	case codes.NotFound:
		return gcerrors.NotFound
	case codes.FailedPrecondition, codes.Aborted:
		return gcerrors.FailedPrecondition
	case codes.AlreadyExists:
		return gcerrors.AlreadyExists
	case codes.InvalidArgument, codes.OutOfRange:
		return gcerrors.InvalidArgument
	case codes.PermissionDenied, codes.Unauthenticated:
		return gcerrors.PermissionDenied
	case codes.ResourceExhausted:
		return gcerrors.ResourceExhausted
	case codes.Unimplemented:
		return gcerrors.Unimplemented
	case codes.Canceled:
		return gcerrors.Canceled
	case codes.DeadlineExceeded:
		return gcerrors.DeadlineExceeded
	case codes.Internal, codes.DataLoss:
		return gcerrors.Internal
	}
	return gcerrors.Unknown
}

// As converts i as gcsblob's bucket does (**storage.Client), or to
// **uploader.Client.
func (b *bucket) As(i any) bool {
	if p, ok := i.(**uploader.Client); ok {
		*p = b.uploads
		return true
	}
	return b.reads.As(i)
}

// ErrorAs converts a writer's error with errors.As (to *uploader.Error,
// for one) and any other as gcsblob does.
func (b *bucket) ErrorAs(err error, i any) bool {
	var ue *uploader.Error
	if errors.As(err, &ue) {
		return errors.As(err, i)
	}
	return b.reads.ErrorAs(err, i)
}

// Attributes returns the attributes of key, through gcsblob.
func (b *bucket) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	a, err := b.reads.Attributes(ctx, key)
	if err != nil {
		return nil, err
	}
	return &driver.Attributes{
		CacheControl:       a.CacheControl,
		ContentDisposition: a.ContentDisposition,
		ContentEncoding:    a.ContentEncoding,
		ContentLanguage:    a.ContentLanguage,
		ContentType:        a.ContentType,
		Metadata:           a.Metadata,
		CreateTime:         a.CreateTime,
		ModTime:            a.ModTime,
		Size:               a.Size,
		MD5:                a.MD5,
		ETag:               a.ETag,
		AsFunc:             a.As,
	}, nil
}

// defaultPageSize is gcsblob's page size when the caller sets none.
const defaultPageSize = 1000

// ListPaged lists one page of objects, through gcsblob.
func (b *bucket) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	size := opts.PageSize
	if size <= 0 {
		size = defaultPageSize
	}
	token := opts.PageToken
	if len(token) == 0 {
		token = blob.FirstPageToken // a driver's first page is nil, the portable type's this
	}
	objs, next, err := b.reads.ListPage(ctx, token, size, &blob.ListOptions{
		Prefix:     opts.Prefix,
		Delimiter:  opts.Delimiter,
		BeforeList: opts.BeforeList,
	})
	if err != nil {
		return nil, err
	}
	page := &driver.ListPage{Objects: make([]*driver.ListObject, len(objs)), NextPageToken: next}
	for i, o := range objs {
		page.Objects[i] = &driver.ListObject{Key: o.Key, ModTime: o.ModTime, Size: o.Size, MD5: o.MD5, IsDir: o.IsDir, AsFunc: o.As}
	}
	return page, nil
}

// NewRangeReader reads length bytes of key from offset (length < 0: to the
// end), through gcsblob.
func (b *bucket) NewRangeReader(ctx context.Context, key string, offset, length int64, opts *driver.ReaderOptions) (driver.Reader, error) {
	r, err := b.reads.NewRangeReader(ctx, key, offset, length, &blob.ReaderOptions{BeforeRead: opts.BeforeRead})
	if err != nil {
		return nil, err
	}
	return &reader{r: r}, nil
}

// reader is gcsblob's reader as a driver.Reader.
type reader struct{ r *blob.Reader }

func (r *reader) Read(p []byte) (int, error) { return r.r.Read(p) }
func (r *reader) Close() error               { return r.r.Close() }
func (r *reader) As(i any) bool              { return r.r.As(i) }
func (r *reader) Attributes() *driver.ReaderAttributes {
	return &driver.ReaderAttributes{ContentType: r.r.ContentType(), ModTime: r.r.ModTime(), Size: r.r.Size()}
}

// NewTypedWriter starts an upload of key through objup; see the package
// doc for the options it honours.
func (b *bucket) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	var extra []uploader.WriterOption
	if opts.BeforeWrite != nil {
		err := opts.BeforeWrite(func(i any) bool {
			p, ok := i.(**[]uploader.WriterOption)
			if ok {
				*p = &extra
			}
			return ok
		})
		if err != nil {
			return nil, err
		}
	}
	wopts := append(append(b.opts.WriterOptions[:len(b.opts.WriterOptions):len(b.opts.WriterOptions)], extra...),
		uploader.WithAttrs(uploader.ObjectAttrs{
			ContentType:        contentType,
			CacheControl:       opts.CacheControl,
			ContentDisposition: opts.ContentDisposition,
			ContentEncoding:    opts.ContentEncoding,
			ContentLanguage:    opts.ContentLanguage,
			Metadata:           opts.Metadata,
		}))
	if len(opts.ContentMD5) > 0 {
		wopts = append(wopts, uploader.WithSendMD5(opts.ContentMD5))
	}
	if opts.IfNotExist {
		wopts = append(wopts, uploader.WithConditions(uploader.Conditions{DoesNotExist: true}))
	}
	if opts.BufferSize > 0 {
		wopts = append(wopts, uploader.WithChunkSize(chunkSize(opts.BufferSize)))
	}
	w, err := b.uploads.NewWriter(ctx, b.name, escapeKey(key), wopts...)
	if err != nil {
		return nil, err
	}
	return w, nil
}

// chunkSize rounds a buffer size up to objup's chunk sizes: a multiple of
// 256 KiB, at most 64 MiB (the uploader's largest chunk).
func chunkSize(n int) int {
	return min((n+pool.Quantum-1)/pool.Quantum*pool.Quantum, 64<<20)
}

// Copy copies srcKey to dstKey, through gcsblob.
func (b *bucket) Copy(ctx context.Context, dstKey, srcKey string, opts *driver.CopyOptions) error {
	return b.reads.Copy(ctx, dstKey, srcKey, &blob.CopyOptions{BeforeCopy: opts.BeforeCopy})
}

// Delete deletes key, through gcsblob.
func (b *bucket) Delete(ctx context.Context, key string, opts *driver.DeleteOptions) error {
	return b.reads.DeleteWithOptions(ctx, key, &blob.DeleteOptions{BeforeDelete: opts.BeforeDelete})
}

// SignedURL returns gcsblob's signed URL for key.
func (b *bucket) SignedURL(ctx context.Context, key string, opts *driver.SignedURLOptions) (string, error) {
	return b.reads.SignedURL(ctx, key, &blob.SignedURLOptions{
		Expiry:                   opts.Expiry,
		Method:                   opts.Method,
		ContentType:              opts.ContentType,
		EnforceAbsentContentType: opts.EnforceAbsentContentType,
		BeforeSign:               opts.BeforeSign,
	})
}

// Close closes the clients the bucket owns: those the URL opener made for
// it.
func (b *bucket) Close() error {
	var err error
	if b.closeReads {
		err = b.reads.Close()
	}
	if b.closeUploads {
		if cerr := b.uploads.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("objupblob: %w", cerr))
		}
	}
	return err
}
