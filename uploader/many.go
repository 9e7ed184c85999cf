package uploader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/objup/objup/header"
	"github.com/objup/objup/uploader/internal/names"
)

// Upload writes r to gs://bucket/object and returns the stored object's
// attributes. It reads r with the Writer's ReadFrom (straight into chunk
// buffers). A nil r is an InvalidArgument error (an empty object comes from
// an empty reader). On error nothing is stored, and the error is an *Error.
func (c *Client) Upload(ctx context.Context, bucket, object string, r io.Reader, opts ...WriterOption) (*ObjectAttrs, error) {
	if r == nil {
		return nil, invalid("Upload", bucket, object, "%w", errNilReader)
	}
	w, err := c.NewWriter(ctx, bucket, object, opts...)
	if err != nil {
		return nil, err
	}
	if _, err := w.ReadFrom(r); err != nil {
		_ = w.CloseWithError(err)
		return nil, w.err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return w.Attrs(), nil
}

// Item is one object of an UploadMany call. Its content comes from Open when set,
// else from Data.
type Item struct {
	// Name is the object's name in the bucket.
	Name string
	// Data is the object's content when Open is nil. UploadMany reads it and
	// does not keep it after the item's result is reported.
	Data []byte
	// Open, when set, opens the content when the item's turn comes; the reader
	// is closed after the upload. Returning a nil reader without an error is
	// an error for that item (nothing is stored).
	Open func() (io.ReadCloser, error)
	// Tenant, when set, is sent as the item's x-scope-orgid header (see
	// header.WithTenant), overriding a tenant in UploadMany's context.
	Tenant string
	// Options apply to this item's Writer.
	Options []WriterOption
}

// Result is the outcome of one Item.
type Result struct {
	// Name is the item's object name.
	Name string
	// Attrs are the stored object's attributes, nil on failure.
	Attrs *ObjectAttrs
	// Err is the item's error: nil on success; an *Error for an item that
	// failed (its Op is "Open" when Item.Open failed); for an item that was
	// not attempted because a StopOnError run had already failed or the
	// context ended, an error wrapping ErrSkipped (and the cause's text).
	Err error
	// Duration is the item's upload time, from open to stored.
	Duration time.Duration
}

// ErrSkipped marks the Result of an item that UploadMany did not attempt
// because an earlier item failed under StopOnError, or because the context
// ended first.
var ErrSkipped = errors.New("objup: item skipped")

// ManyOption configures an UploadMany call.
// UploadMany applies the options in order, then validates them once.
type ManyOption interface {
	applyMany(*manyConfig)
}

type manyOptionFunc func(*manyConfig)

func (f manyOptionFunc) applyMany(c *manyConfig) { f(c) }

type manyConfig struct {
	concurrency int
	stopOnError bool
	hasBuffers  bool
	buffers     [][]byte
	onResult    func(i int, r Result)
}

// validate is the one check of UploadMany's options.
func (c *manyConfig) validate() error {
	if c.hasBuffers {
		if len(c.buffers) == 0 {
			return errors.New("WithWorkerBuffers: no buffers")
		}
		for i, b := range c.buffers {
			if len(b) == 0 {
				return fmt.Errorf("WithWorkerBuffers: buffer %d is nil or empty", i)
			}
		}
		c.concurrency = len(c.buffers)
	}
	if c.concurrency < 1 {
		return fmt.Errorf("concurrency %d must be at least 1", c.concurrency)
	}
	return nil
}

// WithConcurrency sets how many items upload at once (default 16).
func WithConcurrency(n int) ManyOption {
	return manyOptionFunc(func(c *manyConfig) { c.concurrency = n })
}

// StopOnError stops at the first failed item: items not yet started are
// skipped (their Result.Err wraps ErrSkipped), uploads in progress are
// cancelled, and UploadMany returns that first error. Without it, every item is
// attempted and UploadMany returns an error joining those of failed items.
func StopOnError() ManyOption {
	return manyOptionFunc(func(c *manyConfig) { c.stopOnError = true })
}

// WithWorkerBuffers gives each worker one of the caller's buffers, used with
// WithBuffer for every item that worker uploads (caller-managed pooling). The
// concurrency is len(bufs). UploadMany owns the buffers until it returns.
func WithWorkerBuffers(bufs ...[]byte) ManyOption {
	return manyOptionFunc(func(c *manyConfig) { c.buffers, c.hasBuffers = bufs, true })
}

// OnResult calls f with each item's index and result as soon as it is known,
// from the worker goroutines (calls may be concurrent; f must be safe for that).
func OnResult(f func(i int, r Result)) ManyOption {
	return manyOptionFunc(func(c *manyConfig) { c.onResult = f })
}

// UploadMany uploads items to bucket with bounded concurrency and returns one
// Result per item, in the items' order. Buffers are reused across items: the
// client's pool, or the WithWorkerBuffers buffers.
//
// The bucket, the options and every item's name and tenant are validated
// before anything is sent; an invalid one fails the whole call with an
// InvalidArgument *Error and no RPC (and no results). An item's Options are
// validated when its turn comes, like NewWriter's: an invalid one fails that
// item alone. Otherwise the returned error is nil if every
// item succeeded; under StopOnError it is the first failed item's *Error;
// without it, errors.Join of every failed item's *Error, plus an *Error for
// the context if it ended (errors.As and CodeOf look at the first
// of them; read each Result.Err for the others).
func (c *Client) UploadMany(ctx context.Context, bucket string, items []Item, opts ...ManyOption) ([]Result, error) {
	cfg := manyConfig{concurrency: 16}
	for _, o := range opts {
		if o != nil {
			o.applyMany(&cfg)
		}
	}
	if err := cfg.validate(); err != nil {
		return nil, invalid("UploadMany", bucket, "", "%w", err)
	}
	if err := names.Bucket(bucket); err != nil {
		return nil, invalid("UploadMany", bucket, "", "%w", err)
	}
	for i := range items {
		it := &items[i]
		if err := names.Object(it.Name); err != nil {
			return nil, invalid("UploadMany", bucket, it.Name, "item %d: %w", i, err)
		}
		if it.Tenant != "" {
			if _, err := header.WithTenant(ctx, it.Tenant); err != nil {
				return nil, invalid("UploadMany", bucket, it.Name, "item %d: %w", i, err)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, newError("UploadMany", bucket, "", err)
	}

	results := make([]Result, len(items))
	// Under StopOnError a failed item's error cancels runCtx, which skips
	// the items not yet started and cancels those in progress.
	g, runCtx := errgroup.WithContext(ctx)
	g.SetLimit(min(cfg.concurrency, max(len(items), 1)))
	var bufs chan []byte // WithWorkerBuffers: one per running item
	if cfg.buffers != nil {
		bufs = make(chan []byte, len(cfg.buffers))
		for _, b := range cfg.buffers {
			bufs <- b
		}
	}
	for i := range items {
		if runCtx.Err() != nil {
			break
		}
		g.Go(func() error {
			if runCtx.Err() != nil {
				return nil // skipped
			}
			var buf []byte
			if bufs != nil {
				// Never waits: no more items run than there are buffers.
				buf = <-bufs
				defer func() { bufs <- buf }()
			}
			ictx := runCtx
			if t := items[i].Tenant; t != "" {
				ictx, _ = header.WithTenant(runCtx, t) // validated above
			}
			r := c.uploadItem(ictx, bucket, &items[i], buf)
			results[i] = r
			if cfg.onResult != nil {
				cfg.onResult(i, r)
			}
			if cfg.stopOnError {
				return r.Err
			}
			return nil
		})
	}
	first := g.Wait()

	var errs []error
	for i := range results {
		if results[i].Name == "" {
			cause := first
			if cause == nil {
				cause = ctx.Err()
			}
			results[i] = Result{Name: items[i].Name, Err: fmt.Errorf("%w: %v", ErrSkipped, cause)}
			if cfg.onResult != nil {
				cfg.onResult(i, results[i])
			}
			continue
		}
		if results[i].Err != nil {
			errs = append(errs, results[i].Err)
		}
	}
	if cfg.stopOnError && first != nil {
		return results, first
	}
	if err := ctx.Err(); err != nil {
		errs = append(errs, newError("UploadMany", bucket, "", err))
	}
	return results, errors.Join(errs...)
}

func (c *Client) uploadItem(ctx context.Context, bucket string, it *Item, buf []byte) Result {
	start := time.Now()
	res := Result{Name: it.Name}
	opts := it.Options
	if buf != nil {
		opts = append(opts[:len(opts):len(opts)], WithBuffer(buf))
	}
	var r io.Reader
	if it.Open != nil {
		rc, err := it.Open()
		if err == nil && rc == nil {
			err = invalid("Open", bucket, it.Name, "Item.Open returned a nil reader and no error")
		}
		if err != nil {
			res.Err = newError("Open", bucket, it.Name, err)
			res.Duration = time.Since(start)
			return res
		}
		defer rc.Close()
		r = rc
	}
	w, err := c.NewWriter(ctx, bucket, it.Name, opts...)
	if err == nil {
		if r != nil {
			_, err = w.ReadFrom(r)
		} else {
			_, err = w.Write(it.Data)
		}
		if err != nil {
			_ = w.CloseWithError(err)
		} else {
			err = w.Close()
		}
	}
	res.Err = err
	if err == nil {
		res.Attrs = w.Attrs()
	}
	res.Duration = time.Since(start)
	return res
}
