package objupstore

import (
	"testing"

	"github.com/thanos-io/objstore/providers/gcs"
	"google.golang.org/api/option"
)

// TestChunkSize: the stock provider's ChunkSizeBytes as objup's chunk size.
func TestChunkSize(t *testing.T) {
	tests := []struct{ in, want int }{
		{-1, 0},
		{0, 0},
		{1, 256 << 10},
		{256 << 10, 256 << 10},
		{256<<10 + 1, 512 << 10},
		{16 << 20, 16 << 20},
		{64 << 20, 64 << 20},
		{1 << 30, 64 << 20},
	}
	for _, tc := range tests {
		if got := chunkSize(tc.in); got != tc.want {
			t.Errorf("chunkSize(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// TestClientOptions: how many options each config field adds to objup's
// client.
func TestClientOptions(t *testing.T) {
	tests := []struct {
		name string
		cfg  gcs.Config
		want int
	}{
		{"json, defaults", gcs.Config{}, 1},
		{"grpc, defaults", gcs.Config{UseGRPC: true}, 0},
		{"grpc, pool", gcs.Config{UseGRPC: true, GRPCConnPoolSize: 8}, 1},
		{"json, pool ignored", gcs.Config{GRPCConnPoolSize: 8}, 1},
		{"service account", gcs.Config{UseGRPC: true, ServiceAccount: "{}"}, 1},
		{"chunk size", gcs.Config{UseGRPC: true, ChunkSizeBytes: 1 << 20}, 1},
		{"max retries", gcs.Config{UseGRPC: true, MaxRetries: 3}, 1},
		{"all", gcs.Config{UseGRPC: true, ServiceAccount: "{}", GRPCConnPoolSize: 2, ChunkSizeBytes: 1, MaxRetries: 2}, 4},
	}
	for _, tc := range tests {
		var got []option.ClientOption = clientOptions(tc.cfg)
		if len(got) != tc.want {
			t.Errorf("%s: %d options, want %d", tc.name, len(got), tc.want)
		}
	}
}
