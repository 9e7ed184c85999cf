package uploadertest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/uploader"
)

func TestUploadMany(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var items []uploader.Item
	want := map[string][]byte{}
	for i := range 40 {
		data := payload(1+i*997%(70*kib), uint64(i))
		name := fmt.Sprintf("many/%03d", i)
		it := uploader.Item{Name: name, Tenant: fmt.Sprintf("tenant-%d", i%3)}
		if i%2 == 0 {
			it.Data = data
		} else {
			it.Open = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
		}
		items = append(items, it)
		want[name] = data
	}
	// A large item takes the resumable path inside UploadMany.
	big := payload(3*q+1, 99)
	items = append(items, uploader.Item{Name: "many/big", Data: big, Tenant: "tenant-big"})
	want["many/big"] = big

	var mu sync.Mutex
	seen := 0
	res, err := e.c.UploadMany(ctx, bucket, items, uploader.WithConcurrency(4),
		uploader.OnResult(func(int, uploader.Result) { mu.Lock(); seen++; mu.Unlock() }))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(items) || seen != len(items) {
		t.Fatalf("%d results, %d callbacks, want %d", len(res), seen, len(items))
	}
	for i, r := range res {
		if r.Err != nil || r.Name != items[i].Name || r.Attrs == nil || r.Attrs.Size != int64(len(want[r.Name])) {
			t.Fatalf("result %d = %+v", i, r)
		}
		sameBytes(t, r.Name, e.content(r.Name), want[r.Name])
	}
	// Every RPC carried its item's tenant.
	tenantOf := map[string]string{}
	for _, it := range items {
		tenantOf[it.Name] = it.Tenant
	}
	for _, c := range e.srv.Calls() {
		if c.Object == "" {
			continue
		}
		if c.Tenant != tenantOf[c.Object] {
			t.Fatalf("%s of %s carried tenant %q, want %q", c.Method, c.Object, c.Tenant, tenantOf[c.Object])
		}
	}
	if e.countCalls("QueryWriteStatus") != 0 && e.countCalls("BidiWriteObject") == 0 {
		t.Fatal("unexpected calls")
	}
}

func TestUploadManyErrors(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.c.Upload(ctx, bucket, "exists", bytes.NewReader([]byte("x"))); err != nil {
		t.Fatal(err)
	}
	mk := func() []uploader.Item {
		items := []uploader.Item{}
		for i := range 10 {
			items = append(items, uploader.Item{Name: fmt.Sprintf("e/%d", i), Data: []byte("data"), Options: []uploader.WriterOption{uploader.WithConditions(uploader.Conditions{DoesNotExist: true})}})
		}
		items[3].Name = "exists"
		items[6].Open = func() (io.ReadCloser, error) { return nil, errors.New("cannot open") }
		return items
	}

	t.Run("collect all", func(t *testing.T) {
		res, err := e.c.UploadMany(ctx, bucket, mk(), uploader.WithConcurrency(2))
		if err == nil {
			t.Fatal("no error")
		}
		for i, r := range res {
			switch i {
			case 3:
				if uploader.CodeOf(r.Err) != codes.FailedPrecondition {
					t.Fatalf("item 3: %v", r.Err)
				}
			case 6:
				if r.Err == nil {
					t.Fatal("item 6 succeeded")
				}
			default:
				if r.Err != nil {
					t.Fatalf("item %d: %v", i, r.Err)
				}
			}
		}
	})

	t.Run("stop on error", func(t *testing.T) {
		items := mk()
		for i := range items {
			if items[i].Name != "exists" {
				items[i].Name += "/stop"
			}
		}
		res, err := e.c.UploadMany(ctx, bucket, items, uploader.WithConcurrency(1), uploader.StopOnError())
		if uploader.CodeOf(err) != codes.FailedPrecondition {
			t.Fatalf("UploadMany = %v, want the precondition failure of item 3", err)
		}
		for i, r := range res[4:] {
			if !errors.Is(r.Err, uploader.ErrSkipped) {
				t.Fatalf("item %d: %v, want skipped", i+4, r.Err)
			}
			e.absent(r.Name)
		}
	})

	t.Run("invalid item rejected before any RPC", func(t *testing.T) {
		items := mk()
		items[5].Name = ""
		e.srv.ResetCalls()
		if _, err := e.c.UploadMany(ctx, bucket, items); uploader.CodeOf(err) != codes.InvalidArgument {
			t.Fatalf("UploadMany = %v", err)
		}
		items = mk()
		items[2].Tenant = "bad\ntenant"
		if _, err := e.c.UploadMany(ctx, bucket, items); uploader.CodeOf(err) != codes.InvalidArgument {
			t.Fatalf("UploadMany with bad tenant = %v", err)
		}
		if _, err := e.c.UploadMany(ctx, bucket, mk(), uploader.WithConcurrency(0)); uploader.CodeOf(err) != codes.InvalidArgument {
			t.Fatalf("concurrency 0: %v", err)
		}
		if _, err := e.c.UploadMany(ctx, bucket, mk(), uploader.WithWorkerBuffers(nil)); uploader.CodeOf(err) != codes.InvalidArgument {
			t.Fatalf("nil worker buffer: %v", err)
		}
		if calls := e.srv.Calls(); len(calls) != 0 {
			t.Fatalf("RPCs sent: %v", calls)
		}
	})
}

func TestUploadManyWorkerBuffers(t *testing.T) {
	e := newEnv(t)
	bufs := [][]byte{make([]byte, 64*kib), make([]byte, 64*kib), make([]byte, 64*kib)}
	var items []uploader.Item
	for i := range 30 {
		items = append(items, uploader.Item{Name: fmt.Sprintf("wb/%d", i), Data: payload(1+i*2003%(64*kib), uint64(i))})
	}
	res, err := e.c.UploadMany(context.Background(), bucket, items, uploader.WithWorkerBuffers(bufs...))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		sameBytes(t, r.Name, e.content(r.Name), items[i].Data)
	}
}

func TestUploadManyCancelledSkipsTheRest(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	var items []uploader.Item
	for i := range 50 {
		items = append(items, uploader.Item{Name: fmt.Sprintf("c/%d", i), Data: []byte("x")})
	}
	res, err := e.c.UploadMany(ctx, bucket, items, uploader.WithConcurrency(1),
		uploader.OnResult(func(i int, r uploader.Result) {
			if i == 4 {
				cancel()
			}
		}))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("UploadMany = %v, want context.Canceled", err)
	}
	skipped := 0
	for _, r := range res {
		if errors.Is(r.Err, uploader.ErrSkipped) {
			skipped++
		}
	}
	if skipped < 40 {
		t.Fatalf("%d items skipped after the cancel, want the rest (at least 40)", skipped)
	}
	if n := e.countCalls("WriteObject"); n > 6 {
		t.Fatalf("%d uploads after the context was cancelled", n)
	}
}

// TestValidateNames: NewWriter takes valid bucket and object names and
// refuses invalid ones with InvalidArgument, before anything is sent.
func TestValidateNames(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		bucket, object string
		ok             bool
	}{
		{"my-bucket", "a/b.txt", true},
		{"my.bucket.example", "é", true},
		{"My-Bucket", "x", false},
		{"ab", "x", false},
		{"goog-bucket", "x", false},
		{"192.168.5.4", "x", false},
		{"bkt", "", false},
		{"bkt", "line\r", false},
		{"bkt", "..", false},
		{"bkt", ".well-known/acme-challenge/x", false},
	} {
		w, err := e.c.NewWriter(context.Background(), tc.bucket, tc.object)
		if (err == nil) != tc.ok || (err != nil && uploader.CodeOf(err) != codes.InvalidArgument) {
			t.Errorf("%q/%q: %v, want ok=%v", tc.bucket, tc.object, err, tc.ok)
		}
		if w != nil {
			w.CloseWithError(nil)
		}
	}
	if m := e.methods(); len(m) != 0 {
		t.Fatalf("calls made: %v", m)
	}
}
