package objupblob

import (
	"context"
	"sync/atomic"
	"testing"

	"gocloud.dev/blob"
	"gocloud.dev/blob/gcsblob"
	"gocloud.dev/gcerrors"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/uploader"
)

// TestWriterOptions: Options.WriterOptions and the writer options objupblob
// maps to objup's, each alone, over both transports.
func TestWriterOptions(t *testing.T) {
	var progress atomic.Int64
	tests := []struct {
		name   string
		opts   *Options
		wopts  *blob.WriterOptions
		twice  bool // write the key a second time with the same options
		check  func(t *testing.T, a *blob.Attributes)
		second gcerrors.ErrorCode
	}{
		{name: "Options.WriterOptions", opts: &Options{WriterOptions: []uploader.WriterOption{uploader.WithProgress(func(n int64) { progress.Store(n) })}},
			check: func(t *testing.T, a *blob.Attributes) {
				if progress.Load() != a.Size {
					t.Errorf("progress reported %d bytes, object has %d", progress.Load(), a.Size)
				}
			}},
		{name: "attributes", wopts: &blob.WriterOptions{ContentType: "text/x-test", CacheControl: "no-cache", ContentDisposition: "inline",
			ContentEncoding: "identity", ContentLanguage: "fr", Metadata: map[string]string{"k": "v"}},
			check: func(t *testing.T, a *blob.Attributes) {
				if a.ContentType != "text/x-test" || a.CacheControl != "no-cache" || a.ContentDisposition != "inline" ||
					a.ContentEncoding != "identity" || a.ContentLanguage != "fr" || a.Metadata["k"] != "v" {
					t.Errorf("attributes %+v", a)
				}
			}},
		{name: "IfNotExist", wopts: &blob.WriterOptions{IfNotExist: true}, twice: true, second: gcerrors.FailedPrecondition},
		{name: "ContentMD5 wrong", wopts: &blob.WriterOptions{ContentMD5: make([]byte, 16)}},
		{name: "BufferSize", wopts: &blob.WriterOptions{BufferSize: 1}},
	}
	for _, tc := range tests {
		for _, transport := range []string{"grpc", "json"} {
			t.Run(tc.name+"/"+transport, func(t *testing.T) {
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
				b := OpenBucket(stock, uploads, testBucket, tc.opts)
				data := make([]byte, 300<<10)
				err = b.WriteAll(ctx, "k", data, tc.wopts)
				if tc.name == "ContentMD5 wrong" {
					if err == nil {
						t.Fatal("a wrong ContentMD5 was stored")
					}
					if ok, _ := b.Exists(ctx, "k"); ok {
						t.Fatal("object stored")
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if tc.twice {
					err := b.WriteAll(ctx, "k", data, tc.wopts)
					if got := gcerrors.Code(err); got != tc.second {
						t.Fatalf("second write: code %v (%v), want %v", got, err, tc.second)
					}
					var ue *uploader.Error
					if !b.ErrorAs(err, &ue) {
						t.Fatalf("ErrorAs(*uploader.Error) failed on %v", err)
					}
				}
				a, err := b.Attributes(ctx, "k")
				if err != nil {
					t.Fatal(err)
				}
				if a.Size != int64(len(data)) {
					t.Fatalf("size %d", a.Size)
				}
				if tc.check != nil {
					tc.check(t, a)
				}
			})
		}
	}
}
