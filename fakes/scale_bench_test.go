package fakes

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/internal/wire"
)

// The scale benchmarks show that an operation costs the same with a
// thousand objects stored as with a million. The store is filled directly
// (no requests), the objects sharing one 1 KiB content so that a million of
// them fit in memory; the operations then go through the real fronts, with
// the client in this process:
//
//	go test -run '^$' -bench 'Scale' -benchmem ./fakes/
//
// The million-object case is left out with -short.

const scaleBucket = "scale"

// scaleCounts are the numbers of objects stored before measuring.
func scaleCounts() []int {
	counts := []int{1_000, 10_000, 100_000}
	if !testing.Short() {
		counts = append(counts, 1_000_000)
	}
	return counts
}

// seedName is the name of the i-th seeded object: hashed, so that seeded
// and new names interleave across the index.
func seedName(i int) string {
	return fmt.Sprintf("s/%016x", mix(uint64(i)))
}

// mix is SplitMix64's finalizer: a bijection that scatters consecutive
// integers.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// fill stores n objects of 1 KiB, all sharing content, straight into b.
func fill(tb testing.TB, b *store.Bucket, n int, content []byte) {
	tb.Helper()
	crc := crc32.Checksum(content, crc32c.Table)
	for i := range n {
		c := store.Content{Parts: [][]byte{content}, Size: int64(len(content)), CRC32C: crc}
		if _, err := b.Put(seedName(i), store.Attrs{}, c, nil, ""); err != nil {
			tb.Fatal(err)
		}
	}
}

// scaleServer starts a server whose bucket holds n seeded objects.
func scaleServer(tb testing.TB, n int) *Server {
	tb.Helper()
	s, err := New(WithBucket(scaleBucket), WithCallLog(1000))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	b, _ := s.core.Store.Bucket(scaleBucket)
	fill(tb, b, n, bytes.Repeat([]byte("x"), 1<<10))
	return s
}

func BenchmarkScale(b *testing.B) {
	data := bytes.Repeat([]byte("y"), 1<<10)
	crc := crc32.Checksum(data, crc32c.Table)
	for _, n := range scaleCounts() {
		srv := scaleServer(b, n)
		bkt, _ := srv.core.Store.Bucket(scaleBucket)
		cc, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
		rng := rand.New(rand.NewPCG(uint64(n), 1))

		b.Run(fmt.Sprintf("objects=%d/op=store-put", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c := store.Content{Parts: [][]byte{data}, Size: int64(len(data)), CRC32C: crc}
				if _, err := bkt.Put(fmt.Sprintf("s/%016x-p", rng.Uint64()), store.Attrs{}, c, nil, ""); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("objects=%d/op=store-get", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bkt.Get(seedName(rng.IntN(n)), 0); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("objects=%d/op=create-grpc", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				req := &wire.WriteObjectRequest{
					FirstMessage: &wire.WriteObjectRequest_WriteObjectSpec{WriteObjectSpec: &wire.WriteObjectSpec{
						Resource: &wire.Object{Bucket: api.BucketPrefix + scaleBucket, Name: fmt.Sprintf("s/%016x-g", rng.Uint64())},
					}},
					Data:        &wire.WriteObjectRequest_ChecksummedData{ChecksummedData: &wire.ChecksummedData{Content: data, Crc32C: &crc}},
					FinishWrite: true,
				}
				st, err := wire.NewWriteObjectStream(context.Background(), cc)
				if err != nil {
					b.Fatal(err)
				}
				if err := st.Send(req); err != nil {
					b.Fatal(err)
				}
				if _, err := st.CloseAndRecv(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("objects=%d/op=create-json", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			base := srv.HTTPURL() + "/upload/storage/v1/b/" + scaleBucket + "/o?uploadType=media&name="
			for b.Loop() {
				resp, err := hc.Post(base+fmt.Sprintf("s%%2F%016x-j", rng.Uint64()), "application/octet-stream", bytes.NewReader(data))
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
		})
		b.Run(fmt.Sprintf("objects=%d/op=get-grpc", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				st, err := cc.NewStream(context.Background(), &wire.ReadObjectStream, wire.MethodReadObject)
				if err != nil {
					b.Fatal(err)
				}
				if err := st.SendMsg(&wire.ReadObjectRequest{Bucket: api.BucketPrefix + scaleBucket, Object: seedName(rng.IntN(n))}); err != nil {
					b.Fatal(err)
				}
				st.CloseSend()
				var resp wire.ReadObjectResponse
				if err := st.RecvMsg(&resp); err != nil || len(resp.GetChecksummedData().GetContent()) != 1<<10 {
					b.Fatalf("%v, %d bytes", err, len(resp.GetChecksummedData().GetContent()))
				}
				if err := st.RecvMsg(&resp); err != io.EOF {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("objects=%d/op=get-json", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			base := srv.HTTPURL() + "/storage/v1/b/" + scaleBucket + "/o/s%2F"
			for b.Loop() {
				resp, err := hc.Get(base + seedName(rng.IntN(n))[2:] + "?alt=media")
				if err != nil {
					b.Fatal(err)
				}
				k, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || k != 1<<10 {
					b.Fatalf("status %d, %d bytes", resp.StatusCode, k)
				}
			}
		})
		b.Run(fmt.Sprintf("objects=%d/op=store-list-page", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				page, err := bkt.List(&store.ListQuery{Prefix: "s/", StartOffset: seedName(rng.IntN(n)), PageSize: 100})
				if err != nil || len(page.Objects) == 0 {
					b.Fatal(err)
				}
			}
		})
		cc.Close()
		hc.CloseIdleConnections()
		srv.Close()
	}
}

// BenchmarkHeapPerObject writes 100,000 objects of 1 KiB through the gRPC
// front, each with its own content, and reports the live heap they take per
// object: content plus the store's overhead (map entry, index entry,
// object record, name).
func BenchmarkHeapPerObject(b *testing.B) {
	const n = 100_000
	for b.Loop() {
		b.StopTimer()
		srv, err := New(WithBucket(scaleBucket), WithCallLog(0))
		if err != nil {
			b.Fatal(err)
		}
		cc, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		data := make([]byte, 1<<10)
		before := liveHeap()
		b.StartTimer()
		for i := range n {
			data[0], data[1], data[2] = byte(i), byte(i>>8), byte(i>>16)
			crc := crc32.Checksum(data, crc32c.Table)
			st, err := wire.NewWriteObjectStream(context.Background(), cc)
			if err != nil {
				b.Fatal(err)
			}
			st.Send(&wire.WriteObjectRequest{
				FirstMessage: &wire.WriteObjectRequest_WriteObjectSpec{WriteObjectSpec: &wire.WriteObjectSpec{
					Resource: &wire.Object{Bucket: api.BucketPrefix + scaleBucket, Name: seedName(i), ContentType: "application/octet-stream"},
				}},
				Data:        &wire.WriteObjectRequest_ChecksummedData{ChecksummedData: &wire.ChecksummedData{Content: data, Crc32C: &crc}},
				FinishWrite: true,
			})
			if _, err := st.CloseAndRecv(); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		after := liveHeap()
		b.ReportMetric(float64(after-before)/n, "heap-B/object")
		cc.Close()
		srv.Close()
		b.StartTimer()
	}
}

// liveHeap returns the bytes of live heap objects after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
