package header_test

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/objup/objup/header"
)

// The benchmarks compare each operation with grpc-go's metadata functions,
// in sub-benchmarks impl=header and impl=grpc; compare them with
// benchstat -col /impl.

var (
	sinkCtx context.Context
	sinkMD  metadata.MD
	sinkS   string
	sinkSS  []string
)

// benchBasePairs are the 4 pairs the chains start from; benchBase holds them
// as gRPC metadata.
var (
	benchBasePairs = []string{
		"x-goog-api-client", "gl-go/1.26 objup/0.1",
		"x-goog-user-project", "project-1",
		"x-request-id", "req-0",
		"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
	}
	benchBase = metadata.NewOutgoingContext(context.Background(), metadata.Pairs(benchBasePairs...))
)

var benchDepths = []int{1, 4, 16, 64}

// benchKV returns the pairs of the appends: one distinct key per append.
func benchKV(depth int) (keys, vals []string) {
	for i := range depth {
		keys = append(keys, fmt.Sprintf("x-layer-%02d", i))
		vals = append(vals, fmt.Sprintf("value-%02d", i))
	}
	return keys, vals
}

func appendHeader(keys, vals []string) context.Context {
	ctx := benchBase
	for i := range keys {
		ctx = header.Append(ctx, keys[i], vals[i])
	}
	return ctx
}

func appendGRPC(keys, vals []string) context.Context {
	ctx := benchBase
	for i := range keys {
		ctx = metadata.AppendToOutgoingContext(ctx, keys[i], vals[i])
	}
	return ctx
}

// BenchmarkAppend builds a chain of depth appends; ns/append is the cost of
// one append.
func BenchmarkAppend(b *testing.B) {
	for _, depth := range benchDepths {
		keys, vals := benchKV(depth)
		for _, impl := range []struct {
			name string
			f    func(keys, vals []string) context.Context
		}{{"header", appendHeader}, {"grpc", appendGRPC}} {
			b.Run(fmt.Sprintf("depth=%d/impl=%s", depth, impl.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					sinkCtx = impl.f(keys, vals)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*depth), "ns/append")
			})
		}
	}
}

// BenchmarkAppendFlatten builds a chain of depth appends and flattens it into
// one MD: header.Append + header.Flatten against
// metadata.AppendToOutgoingContext + metadata.FromOutgoingContext, both from
// the 4 base pairs in gRPC metadata. In impl=header-chainbase, the 4 base
// pairs are in the chain instead (one Append, outside the loop).
func BenchmarkAppendFlatten(b *testing.B) {
	chainBase := header.Append(context.Background(), benchBasePairs...)
	for _, depth := range benchDepths {
		keys, vals := benchKV(depth)
		b.Run(fmt.Sprintf("depth=%d/impl=header", depth), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkMD = header.Flatten(appendHeader(keys, vals))
			}
		})
		b.Run(fmt.Sprintf("depth=%d/impl=header-chainbase", depth), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ctx := chainBase
				for i := range keys {
					ctx = header.Append(ctx, keys[i], vals[i])
				}
				sinkMD = header.Flatten(ctx)
			}
		})
		b.Run(fmt.Sprintf("depth=%d/impl=grpc", depth), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkMD, _ = metadata.FromOutgoingContext(appendGRPC(keys, vals))
			}
		})
	}
}

// BenchmarkFlatten flattens a chain built beforehand.
func BenchmarkFlatten(b *testing.B) {
	for _, depth := range benchDepths {
		keys, vals := benchKV(depth)
		chain, grpc := appendHeader(keys, vals), appendGRPC(keys, vals)
		b.Run(fmt.Sprintf("depth=%d/impl=header", depth), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkMD = header.Flatten(chain)
			}
		})
		b.Run(fmt.Sprintf("depth=%d/impl=grpc", depth), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkMD, _ = metadata.FromOutgoingContext(grpc)
			}
		})
	}
}

// BenchmarkTenantExtraction reads the tenant from 10 keys of incoming
// metadata, as a server does on every request.
func BenchmarkTenantExtraction(b *testing.B) {
	md := metadata.Pairs(
		":authority", "storage.googleapis.com",
		"content-type", "application/grpc",
		"user-agent", "grpc-go/1.85.0",
		"x-goog-api-client", "gl-go/1.26 objup/0.1",
		"x-goog-request-params", "bucket=projects/_/buckets/logs",
		"x-goog-user-project", "project-1",
		"x-request-id", "req-0",
		"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"grpc-accept-encoding", "gzip",
		header.TenantKey, "team-a",
	)
	if md.Len() != 10 {
		b.Fatalf("%d keys", md.Len())
	}
	ctx := metadata.NewIncomingContext(context.Background(), md)
	b.Run("impl=header", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkS = header.FromIncoming(ctx, header.TenantKey)
		}
	})
	b.Run("impl=grpc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			in, _ := metadata.FromIncomingContext(ctx)
			sinkSS = in.Get(header.TenantKey)
		}
	})
}

// BenchmarkOutgoingContext prepares the metadata of one RPC from a chain of
// depth appends plus the routing header, against the same appends through
// metadata.AppendToOutgoingContext plus one more for the routing header.
func BenchmarkOutgoingContext(b *testing.B) {
	for _, depth := range []int{4, 16} {
		keys, vals := benchKV(depth)
		chain, grpc := appendHeader(keys, vals), appendGRPC(keys, vals)
		b.Run(fmt.Sprintf("depth=%d/impl=header", depth), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkCtx = header.OutgoingContext(chain, "x-goog-request-params", "bucket=projects/_/buckets/logs")
			}
		})
		b.Run(fmt.Sprintf("depth=%d/impl=grpc", depth), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkCtx = metadata.AppendToOutgoingContext(grpc, "x-goog-request-params", "bucket=projects/_/buckets/logs")
			}
		})
	}
}
