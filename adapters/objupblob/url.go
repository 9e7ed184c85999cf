package objupblob

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync"

	"gocloud.dev/blob"
	"gocloud.dev/blob/gcsblob"
	"gocloud.dev/gcp"
	"google.golang.org/api/option"

	"github.com/objup/objup/uploader"
)

// Scheme is the URL scheme objupblob registers its default opener for
// with blob.DefaultURLMux: "objup://my-bucket".
const Scheme = "objup"

func init() {
	blob.DefaultURLMux().RegisterBucket(Scheme, new(lazyOpener))
}

// lazyOpener makes a URLOpener with default credentials on first use.
type lazyOpener struct {
	once   sync.Once
	opener *URLOpener
	err    error
}

func (o *lazyOpener) OpenBucketURL(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
	o.once.Do(func() {
		o.opener, o.err = defaultOpener(ctx)
	})
	if o.err != nil {
		return nil, fmt.Errorf("open bucket %v: %w", u, o.err)
	}
	return o.opener.OpenBucketURL(ctx, u)
}

// defaultOpener reads with gcsblob's defaults: Application Default
// Credentials, or no credentials when an emulator is named.
func defaultOpener(ctx context.Context) (*URLOpener, error) {
	if os.Getenv("STORAGE_EMULATOR_HOST") != "" || os.Getenv("STORAGE_EMULATOR_HOST_GRPC") != "" {
		return &URLOpener{GCS: gcsblob.URLOpener{Client: gcp.NewAnonymousHTTPClient(gcp.DefaultTransport())}}, nil
	}
	creds, err := gcp.DefaultCredentials(ctx)
	if err != nil {
		return nil, err
	}
	client, err := gcp.NewHTTPClient(gcp.DefaultTransport(), gcp.CredentialsTokenSource(creds))
	if err != nil {
		return nil, err
	}
	return &URLOpener{GCS: gcsblob.URLOpener{Client: client}}, nil
}

// URLOpener opens objupblob URLs: "objup://BUCKET?transport=grpc|json".
// transport (default grpc) is objup's transport; every other query
// parameter is gcsblob's, for the reads.
type URLOpener struct {
	// GCS opens the reads' bucket, given the URL with the scheme "gs" and
	// without objupblob's parameters.
	GCS gcsblob.URLOpener
	// Client, when set, uploads for every bucket it opens, whatever the
	// URL's transport, and stays the caller's to close. Otherwise each
	// bucket makes its own with ClientOptions (and uploader.WithHTTP for
	// transport=json), closed with the bucket.
	Client *uploader.Client
	// ClientOptions are given to the clients the opener makes.
	ClientOptions []option.ClientOption
	// Options are the options of every bucket it opens.
	Options Options
}

// OpenBucketURL opens the bucket u names.
func (o *URLOpener) OpenBucketURL(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
	q := u.Query()
	transport := q.Get("transport")
	q.Del("transport")
	if transport != "" && transport != "grpc" && transport != "json" {
		return nil, fmt.Errorf("open bucket %v: transport must be grpc or json, not %q", u, transport)
	}
	gu := *u
	gu.Scheme = gcsblob.Scheme
	gu.RawQuery = q.Encode()
	reads, err := o.GCS.OpenBucketURL(ctx, &gu)
	if err != nil {
		return nil, err
	}
	uploads := o.Client
	if uploads == nil {
		copts := append([]option.ClientOption(nil), o.ClientOptions...)
		if transport == "json" {
			copts = append(copts, uploader.WithHTTP())
		}
		if uploads, err = uploader.NewClient(ctx, copts...); err != nil {
			reads.Close()
			return nil, fmt.Errorf("open bucket %v: %w", u, err)
		}
	}
	b := openBucket(reads, uploads, u.Host, &o.Options)
	b.closeReads, b.closeUploads = true, o.Client == nil
	return blob.NewBucket(b), nil
}
