package integration

import (
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ctxT returns a context that ends with the test or after 2 minutes.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// methods returns the methods of calls, in order.
func methods(calls []fakes.Call) []string {
	var out []string
	for _, c := range calls {
		s := c.Method
		if c.Code != codes.OK {
			s += ":" + c.Code.String()
		}
		out = append(out, s)
	}
	return out
}

// checkAttrs compares the attributes the official client reports with the
// content.
func checkAttrs(t *testing.T, what string, a *storage.ObjectAttrs, data []byte) {
	t.Helper()
	sum := md5.Sum(data)
	if a == nil {
		t.Fatalf("%s: no attributes", what)
	}
	if a.Size != int64(len(data)) || a.CRC32C != crc32.Checksum(data, castagnoli) || string(a.MD5) != string(sum[:]) || a.Generation == 0 {
		t.Fatalf("%s: size %d crc32c %#x md5 %x generation %d; want size %d crc32c %#x md5 %x",
			what, a.Size, a.CRC32C, a.MD5, a.Generation, len(data), crc32.Checksum(data, castagnoli), sum)
	}
}

// TestOfficialGRPC writes objects of several sizes with the official gRPC
// client, in its one-shot and resumable modes, then reads them back whole
// and in part, stats, lists and deletes them.
func TestOfficialGRPC(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket(testBucket))
	c := officialGRPC(t, srv)
	bkt := c.Bucket(testBucket)
	const noChunkSize = -1
	cases := []struct {
		name      string
		size      int
		chunkSize int  // Writer.ChunkSize; noChunkSize leaves the default (16 MiB)
		resumable bool // the client should use StartResumableWrite
	}{
		{"0B", 0, noChunkSize, false},
		{"1KiB", kib, noChunkSize, false},
		{"256KiB+1", 256*kib + 1, noChunkSize, false},
		{"5MiB", 5 * mib, noChunkSize, false},
		{"20MiB", 20 * mib, noChunkSize, true},
		{"5MiB in 1MiB chunks", 5 * mib, mib, true},
		{"3MiB+5 unbuffered", 3*mib + 5, 0, false},
	}
	written := map[string][]byte{}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv.ResetCalls()
			name := fmt.Sprintf("rt/%02d-%s", i, tc.name)
			data := payload(tc.size, uint64(i))
			w := bkt.Object(name).NewWriter(ctxT(t))
			if tc.chunkSize != noChunkSize {
				w.ChunkSize = tc.chunkSize
			}
			w.ContentType = "application/x-test"
			w.CacheControl = "no-store"
			w.Metadata = map[string]string{"case": tc.name}
			// Two writes, so the writer sees a stream, not one buffer.
			if _, err := w.Write(data[:len(data)/3]); err != nil {
				t.Fatal(err)
			}
			attrs := write(t, w, data[len(data)/3:])
			checkAttrs(t, "writer attrs", attrs, data)
			written[name] = data

			calls := methods(srv.Calls())
			if got := slices.Contains(calls, fakes.MethodStartResumableWrite); got != tc.resumable {
				t.Errorf("resumable = %v, want %v; calls %v", got, tc.resumable, calls)
			}
			for _, c := range srv.Calls() {
				if c.Bucket != testBucket || c.Object != name || c.Code != codes.OK {
					t.Errorf("call %+v", c)
				}
			}

			sameBytes(t, "read back", readAll(t, bkt.Object(name)), data)
			if tc.size > 0 {
				off, n := int64(tc.size/3), int64(tc.size/3+1)
				r, err := bkt.Object(name).NewRangeReader(ctxT(t), off, n)
				if err != nil {
					t.Fatal(err)
				}
				got := make([]byte, n+1)
				k, _ := fullRead(r, got)
				r.Close()
				sameBytes(t, "range read", got[:k], data[off:off+n])
				r, err = bkt.Object(name).NewRangeReader(ctxT(t), -7, -1)
				if err != nil {
					t.Fatal(err)
				}
				k, _ = fullRead(r, got)
				r.Close()
				sameBytes(t, "suffix read", got[:k], data[max(0, len(data)-7):])
			}

			got, err := bkt.Object(name).Attrs(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			checkAttrs(t, "stat", got, data)
			if got.Generation != attrs.Generation || got.ContentType != "application/x-test" || got.CacheControl != "no-store" ||
				got.Metadata["case"] != tc.name || got.Metageneration != 1 || got.Created.IsZero() || got.Updated.IsZero() {
				t.Fatalf("stat %+v, writer %+v", got, attrs)
			}
		})
	}

	// List with a prefix: every object, in name order, with its size.
	put(t, bkt.Object("other/x"), []byte("not listed"))
	var listed []string
	it := bkt.Objects(ctxT(t), &storage.Query{Prefix: "rt/"})
	for {
		a, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		checkAttrs(t, "listed "+a.Name, a, written[a.Name])
		listed = append(listed, a.Name)
	}
	var want []string
	for n := range written {
		want = append(want, n)
	}
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Fatalf("listed %q, want %q", listed, want)
	}

	// Delete: gone for stat and read.
	for _, n := range want {
		if err := bkt.Object(n).Delete(ctxT(t)); err != nil {
			t.Fatalf("delete %s: %v", n, err)
		}
		if _, err := bkt.Object(n).Attrs(ctxT(t)); !errors.Is(err, storage.ErrObjectNotExist) {
			t.Fatalf("stat after delete: %v", err)
		}
		if _, err := bkt.Object(n).NewReader(ctxT(t)); !errors.Is(err, storage.ErrObjectNotExist) {
			t.Fatalf("read after delete: %v", err)
		}
	}
	if err := bkt.Object(want[0]).Delete(ctxT(t)); !errors.Is(err, storage.ErrObjectNotExist) {
		t.Fatalf("second delete: %v", err)
	}
	it = bkt.Objects(ctxT(t), &storage.Query{Prefix: "rt/"})
	if a, err := it.Next(); !errors.Is(err, iterator.Done) {
		t.Fatalf("after deleting all: %v, %v", a, err)
	}
}

// TestOfficialCrossAPI checks that what one official client writes, over one
// API, the other reads over the other API, byte for byte.
func TestOfficialCrossAPI(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket(testBucket))
	g := officialGRPC(t, srv).Bucket(testBucket)
	h := officialHTTP(t, srv).Bucket(testBucket)
	for i, size := range []int{0, kib, 256*kib + 1, 5 * mib, 20 * mib} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			data := payload(size, uint64(100+i))

			name := fmt.Sprintf("grpc-to-http/%d", size)
			put(t, g.Object(name), data)
			sameBytes(t, "HTTP read of a gRPC write", readAll(t, h.Object(name)), data)
			a, err := h.Object(name).Attrs(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			checkAttrs(t, "HTTP stat of a gRPC write", a, data)

			name = fmt.Sprintf("http-to-grpc/%d", size)
			put(t, h.Object(name), data)
			sameBytes(t, "gRPC read of an HTTP write", readAll(t, g.Object(name)), data)
			a, err = g.Object(name).Attrs(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			checkAttrs(t, "gRPC stat of an HTTP write", a, data)
		})
	}

	// Each API lists what the other wrote.
	list := func(b *storage.BucketHandle, prefix string) []string {
		var names []string
		it := b.Objects(ctxT(t), &storage.Query{Prefix: prefix})
		for {
			a, err := it.Next()
			if errors.Is(err, iterator.Done) {
				return names
			}
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, a.Name)
		}
	}
	want := []string{"grpc-to-http/0", "grpc-to-http/1024", "grpc-to-http/20971520", "grpc-to-http/262145", "grpc-to-http/5242880"}
	if got := list(h, "grpc-to-http/"); !slices.Equal(got, want) {
		t.Errorf("HTTP list of gRPC writes: %q", got)
	}
	for i := range want {
		want[i] = strings.Replace(want[i], "grpc-to-http", "http-to-grpc", 1)
	}
	if got := list(g, "http-to-grpc/"); !slices.Equal(got, want) {
		t.Errorf("gRPC list of HTTP writes: %q", got)
	}
}

// TestOfficialDoesNotExist writes with a DoesNotExist precondition over both
// APIs: it succeeds on a new name, and fails on an existing object with
// FAILED_PRECONDITION over gRPC and 412 over HTTP, leaving it unchanged.
func TestOfficialDoesNotExist(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket(testBucket))
	g := officialGRPC(t, srv).Bucket(testBucket)
	h := officialHTTP(t, srv).Bucket(testBucket)
	old := []byte("the original")
	for _, tc := range []struct {
		api  string
		bkt  *storage.BucketHandle
		size int
	}{
		{"gRPC one-shot", g, kib},
		{"gRPC resumable", g, 17 * mib},
		{"HTTP", h, kib},
	} {
		t.Run(tc.api, func(t *testing.T) {
			data := payload(tc.size, 7)
			fresh := tc.bkt.Object("new-" + tc.api).If(storage.Conditions{DoesNotExist: true})
			checkAttrs(t, "new object", put(t, fresh, data), data)

			name := "taken-" + tc.api
			put(t, g.Object(name), old)
			w := tc.bkt.Object(name).If(storage.Conditions{DoesNotExist: true}).NewWriter(ctxT(t))
			w.Write(data)
			err := w.Close()
			var gerr *googleapi.Error
			switch {
			case tc.bkt == g && status.Code(err) != codes.FailedPrecondition:
				t.Fatalf("gRPC: got %v (code %v), want FailedPrecondition", err, status.Code(err))
			case tc.bkt == h && (!errors.As(err, &gerr) || gerr.Code != http.StatusPreconditionFailed):
				t.Fatalf("HTTP: got %v, want a 412 googleapi.Error", err)
			}
			sameBytes(t, "untouched over gRPC", readAll(t, g.Object(name)), old)
			sameBytes(t, "untouched over HTTP", readAll(t, h.Object(name)), old)
		})
	}
}

// TestOfficialFaults installs fault rules and checks what the official gRPC
// client makes of them: which uploads it completes, byte for byte, and which
// fail, leaving nothing behind.
func TestOfficialFaults(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket(testBucket))
	bkt := officialGRPC(t, srv).Bucket(testBucket)
	doesNotExist := storage.Conditions{DoesNotExist: true}
	for _, tc := range []struct {
		name    string
		size    int
		conds   *storage.Conditions
		install func()
		// wantErr is the code of the upload's error; codes.OK means the
		// upload succeeds with exact content.
		wantErr codes.Code
		// calls are the write calls expected, in order.
		calls []string
	}{
		{
			name: "one-shot retried on UNAVAILABLE (idempotent with DoesNotExist)", size: mib, conds: &doesNotExist,
			install: func() { srv.FailCall(fakes.MethodBidiWriteObject, 1, codes.Unavailable) },
			calls:   []string{"BidiWriteObject:Unavailable", "BidiWriteObject"},
		},
		{
			name: "one-shot not retried without a precondition", size: mib,
			install: func() { srv.FailCall(fakes.MethodBidiWriteObject, 1, codes.Unavailable) },
			wantErr: codes.Unavailable,
			calls:   []string{"BidiWriteObject:Unavailable"},
		},
		{
			name: "resumable session retried on UNAVAILABLE", size: 20 * mib,
			install: func() { srv.FailCall(fakes.MethodBidiWriteObject, 1, codes.Unavailable) },
			calls:   []string{"StartResumableWrite", "BidiWriteObject:Unavailable", "QueryWriteStatus", "BidiWriteObject"},
		},
		{
			name: "StartResumableWrite retried on UNAVAILABLE (DoesNotExist)", size: 20 * mib, conds: &doesNotExist,
			install: func() { srv.FailCall(fakes.MethodStartResumableWrite, 1, codes.Unavailable) },
			calls:   []string{"StartResumableWrite:Unavailable", "StartResumableWrite", "BidiWriteObject"},
		},
		{
			name: "StartResumableWrite not retried without a precondition", size: 20 * mib,
			install: func() { srv.FailCall(fakes.MethodStartResumableWrite, 1, codes.Unavailable) },
			wantErr: codes.Unavailable,
			calls:   []string{"StartResumableWrite:Unavailable"},
		},
		{
			name: "resumable stream broken mid-message resumes from the persisted size", size: 20 * mib,
			install: func() { srv.BreakStream(fakes.MethodBidiWriteObject, 5*mib+3, codes.Unavailable) },
			calls:   []string{"StartResumableWrite", "BidiWriteObject:Unavailable", "QueryWriteStatus", "BidiWriteObject"},
		},
		{
			name: "resumable stream broken twice", size: 20 * mib,
			install: func() {
				srv.BreakStream(fakes.MethodBidiWriteObject, 3*mib, codes.Unavailable)
				srv.BreakStream(fakes.MethodBidiWriteObject, 15*mib, codes.Internal)
			},
			calls: []string{"StartResumableWrite", "BidiWriteObject:Unavailable", "QueryWriteStatus",
				"BidiWriteObject:Internal", "QueryWriteStatus", "BidiWriteObject"},
		},
		{
			name: "corrupted message is DATA_LOSS, not retried", size: 3 * mib, conds: &doesNotExist,
			install: func() { srv.CorruptNext(fakes.MethodBidiWriteObject) },
			wantErr: codes.DataLoss,
			calls:   []string{"BidiWriteObject:DataLoss"},
		},
		{
			name: "slow server", size: kib,
			install: func() { srv.Delay(fakes.MethodBidiWriteObject, 50*time.Millisecond) },
			calls:   []string{"BidiWriteObject"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.ClearFaults()
			srv.ResetCalls()
			t.Cleanup(srv.ClearFaults)
			data := payload(tc.size, 3)
			o := bkt.Object(fmt.Sprintf("faults/%s", tc.name))
			wo := o
			if tc.conds != nil {
				wo = o.If(*tc.conds)
			}
			tc.install()
			w := wo.NewWriter(ctxT(t))
			_, err := w.Write(data)
			if cerr := w.Close(); err == nil {
				err = cerr
			}
			var write []string
			for _, m := range methods(srv.Calls()) {
				if m != "GetObject:NotFound" {
					write = append(write, m)
				}
			}
			if !slices.Equal(write, tc.calls) {
				t.Errorf("calls %v, want %v", write, tc.calls)
			}
			if tc.wantErr != codes.OK {
				if status.Code(err) != tc.wantErr {
					t.Fatalf("got %v (code %v), want %v", err, status.Code(err), tc.wantErr)
				}
				if _, err := o.Attrs(ctxT(t)); !errors.Is(err, storage.ErrObjectNotExist) {
					t.Fatalf("after a failed upload: %v, want ErrObjectNotExist", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkAttrs(t, "writer attrs", w.Attrs(), data)
			sameBytes(t, "read back", readAll(t, o), data)
		})
	}

	// Reads are retried too.
	srv.ClearFaults()
	data := payload(5*mib, 4)
	put(t, bkt.Object("faults/read"), data)
	srv.FailCall(fakes.MethodReadObject, 1, codes.Unavailable)
	sameBytes(t, "read after a failed ReadObject", readAll(t, bkt.Object("faults/read")), data)
}

// TestOfficialTenant checks that the tenant a client puts in its outgoing
// metadata reaches the fake's request log, on every kind of call.
func TestOfficialTenant(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket(testBucket))
	bkt := officialGRPC(t, srv).Bucket(testBucket)
	ctx := metadata.AppendToOutgoingContext(ctxT(t), "x-scope-orgid", "tenant-7")
	for _, size := range []int{kib, 17 * mib} {
		w := bkt.Object("t").NewWriter(ctx)
		write(t, w, payload(size, 1))
	}
	// A whole read: the server logs a call when it ends, before the client
	// sees the end of the stream.
	r, err := bkt.Object("t").NewReader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if _, err := bkt.Object("t").Attrs(ctx); err != nil {
		t.Fatal(err)
	}
	if err := bkt.Object("t").Delete(ctx); err != nil {
		t.Fatal(err)
	}
	calls := srv.Calls()
	want := []string{"BidiWriteObject", "StartResumableWrite", "BidiWriteObject", "ReadObject", "GetObject", "DeleteObject"}
	if got := methods(calls); !slices.Equal(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
	for _, c := range calls {
		if c.Tenant != "tenant-7" || c.Bucket != testBucket || c.Object != "t" {
			t.Errorf("call %+v", c)
		}
	}
}
