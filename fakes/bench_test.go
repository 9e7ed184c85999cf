package fakes_test

import (
	"fmt"
	"testing"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/internal/wire"
)

// BenchmarkWriteObject measures one-shot writes through the fake (client and
// server in this process), over a fixed set of 64 names. The cost per
// write does not depend on the number of objects stored: see
// BenchmarkStoreScale.
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
			if _, err := srv.PutObject(fakes.Object{ObjectAttrs: fakes.ObjectAttrs{Bucket: bucket, Name: "o"}, Content: payload(size, 2)}); err != nil {
				b.Fatal(err)
			}
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
