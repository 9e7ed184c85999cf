package fakes_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/internal/wire"
)

func TestFailCall(t *testing.T) {
	srv, cc := start(t)
	put(t, cc, "x", []byte("x"))
	stat := func() error {
		_, err := getObject(ctxT(t), cc, &wire.GetObjectRequest{Bucket: bucketRes, Object: "x"})
		return err
	}

	srv.FailCall(fakes.MethodGetObject, 2, codes.Unavailable)
	srv.FailCall("/google.storage.v2.Storage/GetObject", 3, codes.ResourceExhausted)
	srv.FailCall(fakes.MethodListObjects, 1, codes.Internal) // another method: does not count
	wantCode(t, stat(), codes.OK)
	wantCode(t, stat(), codes.Unavailable)
	wantCode(t, stat(), codes.ResourceExhausted)
	wantCode(t, stat(), codes.OK) // both rules spent

	// Two rules for the same call: the call fails once, both are spent.
	srv.FailCall(fakes.MethodGetObject, 1, codes.Aborted)
	srv.FailCall(fakes.MethodGetObject, 1, codes.Aborted)
	wantCode(t, stat(), codes.Aborted)
	wantCode(t, stat(), codes.OK)

	// A failed stream reads nothing: no object is created.
	srv.FailCall(fakes.MethodWriteObject, 1, codes.Unavailable)
	_, err := writeObject(ctxT(t), cc, chunks([]byte("y"), 2*mib, withSpec(spec("y")))...)
	wantCode(t, err, codes.Unavailable)
	absent(t, cc, "y")

	// The failed calls are in the log, with their codes.
	var failed []string
	for _, c := range srv.Calls() {
		if c.Code != codes.OK {
			failed = append(failed, c.Method+" "+c.Code.String())
		}
	}
	if fmt.Sprint(failed) != "[GetObject Unavailable GetObject ResourceExhausted GetObject Aborted WriteObject Unavailable GetObject NotFound]" {
		t.Fatalf("failed calls: %v", failed)
	}

	srv.ClearFaults()
	var resp wire.ListObjectsResponse
	if err := cc.Invoke(ctxT(t), wire.MethodListObjects, &wire.ListObjectsRequest{Parent: bucketRes}, &resp); err != nil {
		t.Fatalf("ListObjects after ClearFaults: %v", err)
	}
}

func TestFaultMisuse(t *testing.T) {
	srv, _ := start(t)
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"FailCall unknown method", func() { srv.FailCall("Nope", 1, codes.Internal) }},
		{"FailCall nth 0", func() { srv.FailCall(fakes.MethodGetObject, 0, codes.Internal) }},
		{"FailCall OK", func() { srv.FailCall(fakes.MethodGetObject, 1, codes.OK) }},
		{"BreakStream read method", func() { srv.BreakStream(fakes.MethodReadObject, 1, codes.Internal) }},
		{"BreakStream negative", func() { srv.BreakStream(fakes.MethodWriteObject, -1, codes.Internal) }},
		{"BreakStream OK", func() { srv.BreakStream(fakes.MethodWriteObject, 1, codes.OK) }},
		{"CorruptNext unary", func() { srv.CorruptNext(fakes.MethodGetObject) }},
		{"Delay unknown", func() { srv.Delay("Nope", time.Second) }},
		{"Delay negative", func() { srv.Delay(fakes.MethodGetObject, -time.Second) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			tc.f()
		})
	}
}

func TestBreakStream(t *testing.T) {
	srv, cc := start(t)
	data := payload(4*mib+3, 11)

	t.Run("one-shot stores nothing", func(t *testing.T) {
		srv.BreakStream(fakes.MethodBidiWriteObject, 3*mib, codes.Unavailable)
		_, err := bidi(ctxT(t), cc, bidiChunks(data, 2*mib, bidiSpec(spec("break-oneshot")))...)
		wantCode(t, err, codes.Unavailable)
		absent(t, cc, "break-oneshot")
		// The rule is spent: the next stream goes through.
		if _, err := bidi(ctxT(t), cc, bidiChunks(data, 2*mib, bidiSpec(spec("break-oneshot")))...); err != nil {
			t.Fatal(err)
		}
	})

	for _, after := range []int64{0, 1, 2 * mib, 3*mib + 7, int64(len(data))} {
		t.Run(fmt.Sprintf("resumable keeps %d bytes", after), func(t *testing.T) {
			name := fmt.Sprintf("break-%d", after)
			id := startResumable(t, cc, spec(name))
			srv.BreakStream(fakes.MethodBidiWriteObject, after, codes.Unavailable)
			_, err := bidi(ctxT(t), cc, bidiChunks(data, 2*mib, bidiUpload(id))...)
			wantCode(t, err, codes.Unavailable)
			st, err := queryWriteStatus(ctxT(t), cc, id)
			if err != nil || st.GetPersistedSize() != after {
				t.Fatalf("QueryWriteStatus = %v, %v; want %d persisted", st, err, after)
			}
			absent(t, cc, name)
			// Resume from the persisted size, in messages cut at new places.
			var msgs []*wire.BidiWriteObjectRequest
			rest := data[after:]
			for i, m := range bidiChunks(rest, mib+1, bidiUpload(id)) {
				m.WriteOffset += after
				if i == 0 && len(rest) == 0 {
					m.Data = nil
				}
				msgs = append(msgs, m)
			}
			crc := crcOf(data)
			msgs[len(msgs)-1].ObjectChecksums = &wire.ObjectChecksums{Crc32C: &crc}
			resps, err := bidi(ctxT(t), cc, msgs...)
			if err != nil {
				t.Fatal(err)
			}
			if _, obj := persisted(resps); obj.GetChecksums().GetCrc32C() != crc {
				t.Fatalf("resource %v", obj)
			}
			sameBytes(t, "resumed object", get(t, cc, name), data)
		})
	}

	t.Run("queued rules, one stream each, WriteObject", func(t *testing.T) {
		id := startResumable(t, cc, spec("queued"))
		srv.BreakStream(fakes.MethodWriteObject, mib, codes.Aborted)
		srv.BreakStream(fakes.MethodWriteObject, mib, codes.Internal)
		msgs := chunks(data, mib/2, withUpload(id))
		_, err := writeObject(ctxT(t), cc, msgs...)
		wantCode(t, err, codes.Aborted)
		msgs = chunks(data[mib:], mib/2, withUpload(id))
		for _, m := range msgs {
			m.WriteOffset += mib
		}
		msgs[len(msgs)-1].ObjectChecksums = nil
		_, err = writeObject(ctxT(t), cc, msgs...)
		wantCode(t, err, codes.Internal)
		st, err := queryWriteStatus(ctxT(t), cc, id)
		if err != nil || st.GetPersistedSize() != 2*mib {
			t.Fatalf("QueryWriteStatus = %v, %v", st, err)
		}
		msgs = chunks(data[2*mib:], mib/2, withUpload(id))
		for _, m := range msgs {
			m.WriteOffset += 2 * mib
		}
		msgs[len(msgs)-1].ObjectChecksums = nil
		if _, err := writeObject(ctxT(t), cc, msgs...); err != nil {
			t.Fatal(err)
		}
		sameBytes(t, "object", get(t, cc, "queued"), data)
	})
}

func TestCorruptNext(t *testing.T) {
	srv, cc := start(t)
	data := payload(3*mib, 12)

	// With per-message CRC32C: the message is refused.
	srv.CorruptNext(fakes.MethodWriteObject)
	_, err := writeObject(ctxT(t), cc, chunks(data, mib, withSpec(spec("c1")))...)
	wantCode(t, err, codes.DataLoss)
	absent(t, cc, "c1")

	// Without per-message CRC32C, the whole-object CRC32C catches it.
	srv.CorruptNext(fakes.MethodBidiWriteObject)
	msgs := bidiChunks(data, mib, bidiSpec(spec("c2")))
	for _, m := range msgs {
		m.GetChecksummedData().Crc32C = nil
	}
	_, err = bidi(ctxT(t), cc, msgs...)
	wantCode(t, err, codes.DataLoss)
	absent(t, cc, "c2")

	// With no checksum at all, the corruption is stored: the test's own
	// read-back is the only defence, as with the real service.
	srv.CorruptNext(fakes.MethodBidiWriteObject)
	for _, m := range msgs {
		m.ObjectChecksums = nil
	}
	if _, err := bidi(ctxT(t), cc, msgs...); err != nil {
		t.Fatal(err)
	}
	got := get(t, cc, "c2")
	diff := 0
	for i := range got {
		if got[i] != data[i] {
			diff++
		}
	}
	if len(got) != len(data) || diff != 1 {
		t.Fatalf("stored %d bytes with %d corrupted, want %d with 1", len(got), diff, len(data))
	}

	// The rule is spent.
	put(t, cc, "c3", data)
	sameBytes(t, "after", get(t, cc, "c3"), data)
}

func TestDelay(t *testing.T) {
	srv, cc := start(t)
	put(t, cc, "x", []byte("x"))
	const d = 100 * time.Millisecond
	srv.Delay(fakes.MethodGetObject, d)
	t0 := time.Now()
	if _, err := getObject(ctxT(t), cc, &wire.GetObjectRequest{Bucket: bucketRes, Object: "x"}); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(t0); el < d {
		t.Fatalf("call took %v, want at least %v", el, d)
	}
	// The client's deadline ends the wait.
	ctx, cancel := context.WithTimeout(ctxT(t), 10*time.Millisecond)
	defer cancel()
	_, err := getObject(ctx, cc, &wire.GetObjectRequest{Bucket: bucketRes, Object: "x"})
	wantCode(t, err, codes.DeadlineExceeded)

	srv.Delay(fakes.MethodGetObject, 0)
	srv.Delay(fakes.MethodReadObject, time.Hour)
	srv.ClearFaults()
	t0 = time.Now()
	for range 3 {
		getObject(ctxT(t), cc, &wire.GetObjectRequest{Bucket: bucketRes, Object: "x"})
		get(t, cc, "x")
	}
	if el := time.Since(t0); el > 5*d {
		t.Fatalf("calls still delayed: %v", el)
	}
}

func TestCallLog(t *testing.T) {
	srv, cc := start(t)
	ctx := metadata.AppendToOutgoingContext(ctxT(t), "x-scope-orgid", "first", "X-Scope-OrgID", "tenant-a")
	if _, err := writeObject(ctx, cc, chunks([]byte("x"), 2*mib, withSpec(spec("obj")))...); err != nil {
		t.Fatal(err)
	}
	getObject(ctx, cc, &wire.GetObjectRequest{Bucket: bucketRes, Object: "missing"})
	id := startResumable(t, cc, spec("r"))
	queryWriteStatus(ctxT(t), cc, id)
	cc.Invoke(ctx, wire.MethodListObjects, &wire.ListObjectsRequest{Parent: bucketRes}, new(wire.ListObjectsResponse))
	cc.Invoke(ctx, wire.MethodDeleteObject, &wire.DeleteObjectRequest{Bucket: bucketRes, Object: "obj"}, new(wire.Object))
	readObject(ctx, cc, &wire.ReadObjectRequest{Bucket: bucketRes, Object: "obj"})

	want := []fakes.Call{
		{Method: "WriteObject", Tenant: "tenant-a", Bucket: bucket, Object: "obj", Code: codes.OK},
		{Method: "GetObject", Tenant: "tenant-a", Bucket: bucket, Object: "missing", Code: codes.NotFound},
		{Method: "StartResumableWrite", Bucket: bucket, Object: "r", Code: codes.OK},
		{Method: "QueryWriteStatus", Bucket: bucket, Object: "r", Code: codes.OK},
		{Method: "ListObjects", Tenant: "tenant-a", Bucket: bucket, Code: codes.OK},
		{Method: "DeleteObject", Tenant: "tenant-a", Bucket: bucket, Object: "obj", Code: codes.OK},
		{Method: "ReadObject", Tenant: "tenant-a", Bucket: bucket, Object: "obj", Code: codes.NotFound},
	}
	got := srv.Calls()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
	got[0].Tenant = "changed"
	if srv.Calls()[0].Tenant != "tenant-a" {
		t.Fatal("Calls returned the log itself, not a copy")
	}
	srv.ResetCalls()
	if n := len(srv.Calls()); n != 0 {
		t.Fatalf("%d calls after ResetCalls", n)
	}
}

// TestConcurrent runs writes of several kinds at once while fault rules are
// installed and removed, for the race detector, then checks every object
// that was written successfully.
func TestConcurrent(t *testing.T) {
	srv, cc := start(t)
	const workers, perWorker = 8, 6
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		done = map[string][]byte{}
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				name := fmt.Sprintf("w%d/%d", w, i)
				data := payload(1+(w*perWorker+i)*10_000, byte(w*perWorker+i))
				ctx := metadata.AppendToOutgoingContext(ctxT(t), "x-scope-orgid", fmt.Sprintf("t%d", w))
				var err error
				if i%2 == 0 {
					_, err = writeObject(ctx, cc, chunks(data, 32<<10, withSpec(spec(name)))...)
				} else {
					_, err = bidi(ctx, cc, bidiChunks(data, 32<<10, bidiSpec(spec(name)))...)
				}
				if err == nil {
					mu.Lock()
					done[name] = data
					mu.Unlock()
				}
			}
		}()
	}
	for range 10 {
		srv.FailCall(fakes.MethodWriteObject, 2, codes.Unavailable)
		srv.BreakStream(fakes.MethodBidiWriteObject, 50_000, codes.Unavailable)
		srv.CorruptNext(fakes.MethodWriteObject)
		srv.Calls()
		srv.ClearFaults()
	}
	wg.Wait()
	if len(done) == 0 {
		t.Fatal("no write succeeded")
	}
	for name, data := range done {
		sameBytes(t, name, get(t, cc, name), data)
	}
	tenants := map[string]bool{}
	for _, c := range srv.Calls() {
		if c.Method == fakes.MethodWriteObject || c.Method == fakes.MethodBidiWriteObject {
			tenants[c.Tenant] = true
		}
	}
	if len(tenants) != workers {
		t.Fatalf("tenants %v", tenants)
	}
}

func TestCallLogRing(t *testing.T) {
	for _, tc := range []struct{ size, calls int }{{3, 2}, {3, 3}, {3, 7}, {1, 5}, {0, 4}} {
		t.Run(fmt.Sprintf("size %d, %d calls", tc.size, tc.calls), func(t *testing.T) {
			srv, cc := start(t, fakes.WithCallLog(tc.size))
			for i := range tc.calls {
				getObject(ctxT(t), cc, &wire.GetObjectRequest{Bucket: bucketRes, Object: fmt.Sprint(i)})
			}
			var got, want []string
			for _, c := range srv.Calls() {
				got = append(got, c.Object)
			}
			for i := max(0, tc.calls-tc.size); i < tc.calls; i++ {
				want = append(want, fmt.Sprint(i))
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("Calls() objects %v, want %v", got, want)
			}
			wantCounts := []fakes.CallCount{{Method: "GetObject", Code: codes.NotFound, Count: int64(tc.calls)}}
			if c := srv.CallCounts(); fmt.Sprint(c) != fmt.Sprint(wantCounts) {
				t.Fatalf("CallCounts() = %v, want %v", c, wantCounts)
			}
			srv.ResetCalls()
			if len(srv.Calls()) != 0 || len(srv.CallCounts()) != 0 {
				t.Fatalf("after ResetCalls: %v, %v", srv.Calls(), srv.CallCounts())
			}
			getObject(ctxT(t), cc, &wire.GetObjectRequest{Bucket: bucketRes, Object: "after"})
			if n := len(srv.Calls()); n != min(tc.size, 1) {
				t.Fatalf("%d calls after a reset and one call", n)
			}
		})
	}
}

// TestLoseAnswer: a write whose answer is lost is stored all the same, and
// fails with Unavailable; the rule is spent after one write.
func TestLoseAnswer(t *testing.T) {
	srv, cc := start(t)
	srv.LoseAnswer(fakes.MethodWriteObject)
	_, err := writeObject(ctxT(t), cc, chunks([]byte("stored"), 2*mib, withSpec(spec("lost")))...)
	wantCode(t, err, codes.Unavailable)
	if o, err := srv.Object(bucket, "lost"); err != nil || string(o.Content) != "stored" {
		t.Fatalf("the write whose answer was lost: %v, %q", err, o.Content)
	}
	if _, err := writeObject(ctxT(t), cc, chunks([]byte("next"), 2*mib, withSpec(spec("next")))...); err != nil {
		t.Fatalf("the next write: %v", err)
	}
	srv.LoseAnswer(fakes.MethodWriteObject)
	srv.ClearFaults()
	if _, err := writeObject(ctxT(t), cc, chunks([]byte("again"), 2*mib, withSpec(spec("again")))...); err != nil {
		t.Fatalf("a write after ClearFaults: %v", err)
	}
}
