package integration

import (
	"bytes"
	"context"
	"runtime"
	"runtime/metrics"
	"testing"

	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/objup/objup/uploader"
)

// goroutinesCreated reads the process's count of goroutines ever created.
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestOneShotStartsNoGoroutine guards a design claim: an object that fits in
// one chunk goes out in one WriteObject call on the caller's goroutine, with
// no goroutine started, by objup or by gRPC. The fake runs in another process,
// so every goroutine this process creates during the uploads is the client's.
// The resumable path starts goroutines (a receiver per stream, gRPC's own),
// which the test also checks it can see.
func TestOneShotStartsNoGoroutine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs fakegcs")
	}
	addr, stop := startExternalFake(t)
	defer stop()
	ctx := context.Background()
	c, err := uploader.NewClient(ctx,
		option.WithEndpoint(addr),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	upload := func(n, size int) uint64 {
		data := bytes.Repeat([]byte("g"), size)
		before := goroutinesCreated()
		for i := range n {
			if _, err := c.Upload(ctx, benchBucket, "g/"+string(rune('a'+i%26)), bytes.NewReader(data)); err != nil {
				t.Fatal(err)
			}
		}
		return goroutinesCreated() - before
	}
	upload(3, 1<<10) // the connection's own goroutines start with the first call
	// The runtime starts a few goroutines of its own when it first needs
	// them (a GC's mark workers, one per P): a collection now starts them.
	runtime.GC()
	// The process may still start a goroutine now and then that no upload
	// asked for (a runtime helper, a timer the runtime or gRPC arms); one
	// goroutine per upload would be 100.
	const stray = 2
	for _, size := range []int{0, 1 << 10, 16 << 10, 256 << 10} {
		if n := upload(100, size); n > stray {
			t.Errorf("100 one-shot uploads of %d bytes created %d goroutines, want none (at most %d stray)", size, n, stray)
		}
	}
	if n := upload(5, 256<<10+1); n == 0 {
		t.Error("5 resumable uploads created no goroutine: the measure sees nothing")
	}
}
