package fakes_test

import (
	"fmt"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/internal/wire"
)

// BenchmarkWriteObject measures one-shot writes through the fake (client and
// server in this process), over a fixed set of 64 names so the bucket stays
// small.
func BenchmarkWriteObject(b *testing.B) {
	for _, size := range []int{1 << 10, 256 << 10, 4 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			srv := fakes.NewTest(b, fakes.WithBucket(bucket))
			cc := dialB(b, srv)
			data := payload(size, 1)
			msgs := make([][]*wire.WriteObjectRequest, 64)
			for i := range msgs {
				msgs[i] = chunks(data, 2<<20, withSpec(spec(fmt.Sprintf("o%d", i))))
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := writeObject(b.Context(), cc, msgs[i%len(msgs)]...); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkReadObject measures whole-object reads through the fake.
func BenchmarkReadObject(b *testing.B) {
	for _, size := range []int{1 << 10, 4 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			srv := fakes.NewTest(b, fakes.WithBucket(bucket))
			srv.Backend().CreateObject(fakestorage.Object{
				ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: "o"},
				Content:     payload(size, 2),
			})
			cc := dialB(b, srv)
			req := &wire.ReadObjectRequest{Bucket: bucketRes, Object: "o"}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := readObject(b.Context(), cc, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBucketSize shows the cost of a 1 KiB write as the bucket grows:
// fake-gcs-server's memory backend scans every object of the bucket on each
// write and read.
func BenchmarkBucketSize(b *testing.B) {
	for _, n := range []int{0, 100, 1000, 4000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			srv := fakes.NewTest(b, fakes.WithBucket(bucket))
			for i := range n {
				srv.Backend().CreateObject(fakestorage.Object{
					ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: fmt.Sprintf("seed/%d", i)},
					Content:     []byte("x"),
				})
			}
			cc := dialB(b, srv)
			msgs := chunks(payload(1<<10, 3), 2<<20, withSpec(spec("o")))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := writeObject(b.Context(), cc, msgs...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
