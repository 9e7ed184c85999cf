package objupblob

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"cloud.google.com/go/storage"
	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/blob/drivertest"
	"gocloud.dev/blob/gcsblob"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/uploader"
)

const testBucket = "blob-test"

// harness runs the Go CDK's conformance suite on the project's fake, in
// process on loopback: objup uploads over one transport, and gcsblob reads
// over the same one through the official client.
type harness struct {
	srv     *fakes.Server
	reads   *storage.Client
	uploads *uploader.Client
}

// newHarness makes the harness of transport "grpc" or "json".
func newHarness(transport string) drivertest.HarnessMaker {
	return func(ctx context.Context, t *testing.T) (drivertest.Harness, error) {
		srv, err := fakes.New(fakes.WithBucket(testBucket))
		if err != nil {
			return nil, err
		}
		h := &harness{srv: srv}
		h.reads, h.uploads, err = clients(ctx, srv, transport)
		if err != nil {
			srv.Close()
			return nil, err
		}
		return h, nil
	}
}

// clients dials the official client (for gcsblob) and objup's to srv over
// transport.
func clients(ctx context.Context, srv *fakes.Server, transport string) (*storage.Client, *uploader.Client, error) {
	var (
		reads   *storage.Client
		uploads *uploader.Client
		err     error
	)
	switch transport {
	case "grpc":
		dial := []option.ClientOption{
			option.WithEndpoint(srv.GRPCAddr()),
			option.WithoutAuthentication(),
			option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
		}
		if reads, err = storage.NewGRPCClient(ctx, append(dial, storage.WithDisabledClientMetrics())...); err != nil {
			return nil, nil, err
		}
		uploads, err = uploader.NewClient(ctx, dial...)
	default:
		endpoint := option.WithEndpoint(srv.HTTPURL() + "/storage/v1/")
		if reads, err = storage.NewClient(ctx, endpoint, option.WithoutAuthentication()); err != nil {
			return nil, nil, err
		}
		uploads, err = uploader.NewClient(ctx, uploader.WithHTTP(), endpoint, option.WithoutAuthentication())
	}
	if err != nil {
		reads.Close()
		return nil, nil, err
	}
	return reads, uploads, nil
}

func (h *harness) open(ctx context.Context, name string) (driver.Bucket, error) {
	reads, err := gcsblob.OpenBucket(ctx, nil, name, &gcsblob.Options{Client: h.reads})
	if err != nil {
		return nil, err
	}
	return openBucket(reads, h.uploads, name, nil), nil
}

func (h *harness) MakeDriver(ctx context.Context) (driver.Bucket, error) {
	return h.open(ctx, testBucket)
}

func (h *harness) MakeDriverForNonexistentBucket(ctx context.Context) (driver.Bucket, error) {
	return h.open(ctx, "bucket-does-not-exist")
}

// HTTPClient returns nil: without a GoogleAccessID and a signer, gcsblob's
// SignedURL reports Unimplemented and the suite skips what needs it.
func (h *harness) HTTPClient() *http.Client { return nil }

func (h *harness) SupportsCopy() bool               { return true }
func (h *harness) SupportsNonSlashDelimiters() bool { return true }

func (h *harness) Close() {
	h.uploads.Close()
	h.reads.Close()
	h.srv.Close()
}

// TestConformance runs the Go CDK's blob conformance suite over both
// transports.
func TestConformance(t *testing.T) {
	for _, transport := range []string{"grpc", "json"} {
		t.Run(transport, func(t *testing.T) {
			drivertest.RunConformanceTests(t, newHarness(transport), []drivertest.AsTest{verifyAs{}})
		})
	}
}

// verifyAs checks what the driver's As functions convert to: gcsblob's
// types for everything but writers, objup's options for writers.
type verifyAs struct{}

func (verifyAs) Name() string { return "verify As types for objupblob" }

func (verifyAs) BucketCheck(b *blob.Bucket) error {
	var sc *storage.Client
	if !b.As(&sc) {
		return errors.New("Bucket.As(**storage.Client) failed")
	}
	var uc *uploader.Client
	if !b.As(&uc) {
		return errors.New("Bucket.As(**uploader.Client) failed")
	}
	return nil
}

// ErrorCheck: the suite passes the error of reading a missing key, which
// gcsblob reports with the storage library's sentinel, not a
// *googleapi.Error (as gcsblob's own check says).
func (verifyAs) ErrorCheck(b *blob.Bucket, err error) error {
	var ue *uploader.Error
	if b.ErrorAs(err, &ue) {
		return errors.New("a read's error converted to *uploader.Error")
	}
	return nil
}

func (verifyAs) BeforeRead(as func(any) bool) error {
	var sr *storage.Reader
	if !as(&sr) {
		return errors.New("BeforeRead.As failed to get *storage.Reader")
	}
	return nil
}

func (verifyAs) BeforeWrite(as func(any) bool) error {
	var opts *[]uploader.WriterOption
	if !as(&opts) {
		return errors.New("BeforeWrite.As failed to get *[]uploader.WriterOption")
	}
	var persisted int64
	*opts = append(*opts, uploader.WithProgress(func(n int64) { persisted = n }))
	_ = persisted
	var sw *storage.Writer
	if as(&sw) {
		return errors.New("BeforeWrite.As gave a *storage.Writer")
	}
	return nil
}

func (verifyAs) BeforeCopy(as func(any) bool) error {
	var copier *storage.Copier
	if !as(&copier) {
		return errors.New("BeforeCopy.As failed")
	}
	return nil
}

func (verifyAs) BeforeDelete(as func(any) bool) error {
	var objp **storage.ObjectHandle
	if !as(&objp) {
		return errors.New("BeforeDelete.As failed to get ObjectHandle")
	}
	return nil
}

func (verifyAs) BeforeList(as func(any) bool) error {
	var q *storage.Query
	if !as(&q) {
		return errors.New("List.As failed")
	}
	return nil
}

func (verifyAs) BeforeSign(as func(any) bool) error {
	var opts *storage.SignedURLOptions
	if !as(&opts) {
		return errors.New("BeforeSign.As failed")
	}
	return nil
}

func (verifyAs) AttributesCheck(attrs *blob.Attributes) error {
	var oa storage.ObjectAttrs
	if !attrs.As(&oa) {
		return errors.New("Attributes.As returned false")
	}
	return nil
}

func (verifyAs) ReaderCheck(r *blob.Reader) error {
	var rr *storage.Reader
	if !r.As(&rr) {
		return errors.New("Reader.As returned false")
	}
	return nil
}

func (verifyAs) ListObjectCheck(o *blob.ListObject) error {
	var oa storage.ObjectAttrs
	if !o.As(&oa) {
		return errors.New("ListObject.As returned false")
	}
	return nil
}

// TestKeysAsGCSBlob writes the same keys through gcsblob and through
// objupblob and checks that the fake holds the same object names for both:
// keys are escaped exactly as gcsblob escapes them.
func TestKeysAsGCSBlob(t *testing.T) {
	keys := []string{
		"plain", "fwd/slashes", "repeated//slashes", "../foo/../bar/../../baz../",
		"back\\slash", "quote\"d", "new\nline", "carriage\rreturn", "tab\tkey",
		"unicode/ünïcödé/日本", "a__0x41__b", "__0x2f__", "spaces in key", "percent%20",
	}
	for _, transport := range []string{"grpc", "json"} {
		t.Run(transport, func(t *testing.T) {
			ctx := context.Background()
			srv, err := fakes.New(fakes.WithBucket(testBucket))
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			reads, uploads, err := clients(ctx, srv, transport)
			if err != nil {
				t.Fatal(err)
			}
			defer reads.Close()
			defer uploads.Close()
			stock, err := gcsblob.OpenBucket(ctx, nil, testBucket, &gcsblob.Options{Client: reads})
			if err != nil {
				t.Fatal(err)
			}
			ours := OpenBucket(stock, uploads, testBucket, nil)
			for _, k := range keys {
				if err := stock.WriteAll(ctx, "gcsblob/"+k, []byte(k), nil); err != nil {
					t.Fatalf("gcsblob write %q: %v", k, err)
				}
				if err := ours.WriteAll(ctx, "objupblob/"+k, []byte(k), nil); err != nil {
					t.Fatalf("objupblob write %q: %v", k, err)
				}
				got, err := ours.ReadAll(ctx, "objupblob/"+k)
				if err != nil || string(got) != k {
					t.Fatalf("read back %q: %q, %v", k, got, err)
				}
			}
			for _, k := range keys {
				if _, err := srv.Object(testBucket, "gcsblob/"+escapeKey(k)); err != nil {
					t.Errorf("gcsblob did not store %q as %q: %v", k, escapeKey(k), err)
				}
				if _, err := srv.Object(testBucket, "objupblob/"+escapeKey(k)); err != nil {
					t.Errorf("objupblob did not store %q as %q: %v", k, escapeKey(k), err)
				}
			}
			objs, err := srv.ListObjects(testBucket, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) != 2*len(keys) {
				t.Errorf("the fake holds %d objects, want %d", len(objs), 2*len(keys))
			}
		})
	}
}
