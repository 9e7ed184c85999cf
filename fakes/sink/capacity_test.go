package sink

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/objup/objup/fakes/capacity"
	"github.com/objup/objup/internal/wire"
)

// TestSinkCapacity checks the sink's write capacity: one-shot writes on
// both methods and session starts count, the streams of a session do not,
// and a refusal is the fake's, per bucket and per name, counted per tenant.
// The rates are so low that nothing refills during the test.
func TestSinkCapacity(t *testing.T) {
	k := NewTest(t, WithCompose(), WithCapacity(capacity.Config{Rate: 1e-6, Burst: 5, ObjectRate: 1e-6, ObjectBurst: 2}))
	cc := sinkDial(t, k)
	ctx := metadata.AppendToOutgoingContext(sinkCtx(t), "x-scope-orgid", "t1")
	bucketMsg := "The bucket " + sinkBucket + " exceeded the rate limit for object writes"

	data := sinkData(3<<20, 1)
	id := startSession(t, cc, sinkSpec("session"), nil) // 1 write
	one := func(name string) []*wire.BidiWriteObjectRequest {
		msgs := sinkMsgs([]byte(name), 1<<20)
		msgs[0].FirstMessage = &wire.BidiWriteObjectRequest_WriteObjectSpec{WriteObjectSpec: sinkSpec(name)}
		return msgs
	}
	for range 2 { // 2, 3
		if _, err := sendWrite(ctx, cc, asWrite(one("a"))...); err != nil {
			t.Fatal(err)
		}
	}
	_, err := sendBidi(ctx, cc, one("a")...) // the name's two writes are spent
	wantStatus(t, err, codes.ResourceExhausted, "The object "+sinkBucket+"/a exceeded the rate limit for object mutation operations")
	if _, err := sendBidi(ctx, cc, one("b")...); err != nil { // 4
		t.Fatal(err)
	}
	var del emptypb.Empty
	if err := cc.Invoke(ctx, "/google.storage.v2.Storage/DeleteObject", &wire.DeleteObjectRequest{Bucket: sinkSpec("").Resource.Bucket, Object: "b"}, &del); err != nil { // 5, the name's second
		t.Fatal(err)
	}
	_, err = sendWrite(ctx, cc, asWrite(one("c"))...)
	wantStatus(t, err, codes.ResourceExhausted, bucketMsg)
	var resp wire.StartResumableWriteResponse
	err = cc.Invoke(ctx, wire.MethodStartResumableWrite, &wire.StartResumableWriteRequest{WriteObjectSpec: sinkSpec("d")}, &resp)
	wantStatus(t, err, codes.ResourceExhausted, bucketMsg)

	// The session's streams are not counted.
	msgs := sinkMsgs(data, 1<<20)
	for i, m := range msgs {
		m.FirstMessage = &wire.BidiWriteObjectRequest_UploadId{UploadId: id}
		if _, err := sendBidi(ctx, cc, m); err != nil {
			t.Fatalf("session message %d: %v", i, err)
		}
	}
	if st := k.Stats(); st.Objects != 4 || st.Sessions != 1 {
		t.Fatalf("stats %+v", st)
	}
	st := k.CapacityStats()
	want := capacity.Counts{Admitted: 5, RateLimited: 2, ObjectRateLimited: 1}
	if len(st) != 1 || st[0].Bucket != sinkBucket || st[0].Counts != want || len(st[0].Tenants) != 2 ||
		st[0].Tenants[1].Tenant != "t1" || st[0].Tenants[1].Counts != (capacity.Counts{Admitted: 4, RateLimited: 2, ObjectRateLimited: 1}) {
		t.Fatalf("CapacityStats: %+v", st)
	}
	if NewTest(t).CapacityStats() != nil {
		t.Error("CapacityStats of a sink without a capacity")
	}
	if _, err := New(WithCapacity(capacity.Config{Rate: -1})); err == nil {
		t.Error("New accepted a bad capacity")
	}
}
