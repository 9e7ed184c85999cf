package uploadertest_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/api/option"
	"google.golang.org/grpc/codes"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/uploader"
)

// TestConnectionPoolTakesAllStreams: with a front end that caps each
// connection at 10 streams, a pool of 4 connections runs 40 resumable
// uploads at once: the fake sees four connections at their cap, none
// over it, and every upload is stored.
func TestConnectionPoolTakesAllStreams(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	srv, err := fakes.New(fakes.WithBucket(bucket), fakes.WithMaxStreams(10))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c, err := uploader.NewClient(context.Background(), append(dialOptions(srv), option.WithGRPCConnectionPool(4))...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		c.Close()
		srv.Close()
		goleak.VerifyNone(t, ignore)
	}()

	// Each upload opens its stream with its first chunks and holds it,
	// unfinished, until all 40 have had data acknowledged on their
	// streams: a stream over a connection's cap would wait for a slot
	// that never frees.
	const n = 40
	data := payload(3*mib, 21)
	var ws []*uploader.Writer
	var acked sync.WaitGroup
	for i := range n {
		var once sync.Once
		acked.Add(1)
		w, err := c.NewWriter(context.Background(), bucket, fmt.Sprintf("pool/%d", i),
			uploader.WithProgress(func(int64) { once.Do(acked.Done) }))
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, w := range ws {
		wg.Go(func() {
			if _, err := w.Write(data); err != nil {
				errs <- err
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); acked.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(hangLimit):
		t.Fatalf("the 40 uploads did not all run: connections %+v", srv.Conns())
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	active := int64(0)
	conns := 0
	for _, cs := range srv.Conns() {
		if cs.Peak > 10 {
			t.Fatalf("a connection had %d streams, over its cap of 10: %+v", cs.Peak, srv.Conns())
		}
		if cs.Open && cs.Active > 0 {
			conns++
			active += cs.Active
		}
	}
	if conns != 4 || active != n {
		t.Fatalf("%d connections with %d streams in flight, want 4 with %d: %+v", conns, active, n, srv.Conns())
	}
	for _, w := range ws {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		sameBytes(t, "stored", objectContent(t, srv, fmt.Sprintf("pool/%d", i)), data)
	}
}

// objectContent returns a stored object's bytes.
func objectContent(t *testing.T, srv *fakes.Server, name string) []byte {
	t.Helper()
	o, err := srv.Object(bucket, name)
	if err != nil {
		t.Fatalf("stored object %q: %v", name, err)
	}
	return o.Content
}

// TestResumeQueriesOnTheStreamsConnection: a resumed session asks its
// status on the connection its streams use, and opens its next stream
// there: only a call on that connection proves gRPC's writer went past the
// broken stream's messages, before their chunks are released by force and
// reused. Small calls (the session's start) keep to another connection.
func TestResumeQueriesOnTheStreamsConnection(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	srv, err := fakes.New(fakes.WithBucket(bucket), fakes.WithMaxStreams(100))
	if err != nil {
		t.Fatal(err)
	}
	c, err := uploader.NewClient(context.Background(), append(dialOptions(srv), option.WithGRPCConnectionPool(4), uploader.WithRetry(fastRetry))...)
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	defer func() {
		c.Close()
		srv.Close()
		goleak.VerifyNone(t, ignore)
	}()
	srv.BreakStream(fakes.MethodBidiWriteObject, 3*mib, codes.Unavailable)
	data := payload(6*mib, 22)
	if _, err := c.Upload(context.Background(), bucket, "resumed", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	sameBytes(t, "stored", objectContent(t, srv, "resumed"), data)
	var calls []int64
	for _, cs := range srv.Conns() {
		if cs.Calls > 0 { // the pool's idle connections carry none
			calls = append(calls, cs.Calls)
		}
	}
	slices.Sort(calls)
	// StartResumableWrite on the small calls' connection; two streams and
	// the status query between them on one of the pool's.
	if !slices.Equal(calls, []int64{1, 3}) {
		t.Fatalf("calls per connection %v, want [1 3]: %+v", calls, srv.Conns())
	}
}
