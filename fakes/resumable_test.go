package fakes_test

import (
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/internal/wire"
)

// persisted returns the persisted sizes in responses, and the resource if
// one came.
func persisted(resps []*wire.BidiWriteObjectResponse) ([]int64, *wire.Object) {
	var sizes []int64
	var obj *wire.Object
	for _, r := range resps {
		if r.GetResource() != nil {
			obj = r.GetResource()
			continue
		}
		sizes = append(sizes, r.GetPersistedSize())
	}
	return sizes, obj
}

func equalSizes(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestBidiOneShot(t *testing.T) {
	srv, cc := start(t)
	data := payload(5*mib, 3)
	msgs := bidiChunks(data, 2*mib, bidiSpec(spec("bidi")))
	msgs[0].StateLookup = true
	msgs[1].StateLookup, msgs[1].Flush = true, true
	msgs[2].StateLookup = true // ignored: finish_write is set
	resps, err := bidi(ctxT(t), cc, msgs...)
	if err != nil {
		t.Fatal(err)
	}
	sizes, obj := persisted(resps)
	if !equalSizes(sizes, []int64{2 * mib, 4 * mib}) || obj.GetSize() != 5*mib || obj.GetChecksums().GetCrc32C() != crcOf(data) {
		t.Fatalf("persisted %v, resource %v", sizes, obj)
	}
	sameBytes(t, "read", get(t, cc, "bidi"), data)

	// Half-closing a one-shot stream before finish_write stores nothing.
	msgs = bidiChunks(data, 2*mib, bidiSpec(spec("bidi-unfinished")))
	_, err = bidi(ctxT(t), cc, msgs[:2]...)
	wantCode(t, err, codes.InvalidArgument)
	absent(t, cc, "bidi-unfinished")

	// Half-closing an empty stream.
	_, err = bidi(ctxT(t), cc)
	wantCode(t, err, codes.InvalidArgument)

	// append_object_spec needs an object to append to.
	_, err = bidi(ctxT(t), cc, &wire.BidiWriteObjectRequest{
		FirstMessage: &wire.BidiWriteObjectRequest_AppendObjectSpec{AppendObjectSpec: &wire.AppendObjectSpec{Bucket: bucketRes, Object: "x"}},
	})
	wantCode(t, err, codes.NotFound)

	if n := len(srv.Calls()); n != 6 {
		t.Fatalf("%d calls logged, want 6 (4 writes, a read, a stat)", n)
	}
}

func TestResumable(t *testing.T) {
	_, cc := start(t)
	data := payload(7*mib+5, 4)
	s := spec("resumable")
	s.ObjectSize = new(int64)
	*s.ObjectSize = int64(len(data))
	id := startResumable(t, cc, s)
	msgs := bidiChunks(data, 2*mib, nil)

	// First stream: two messages, a state lookup, then a half-close.
	first := msgs[:2]
	first[0].FirstMessage = &wire.BidiWriteObjectRequest_UploadId{UploadId: id}
	first[1].StateLookup, first[1].Flush = true, true
	resps, err := bidi(ctxT(t), cc, first...)
	if err != nil {
		t.Fatal(err)
	}
	if sizes, obj := persisted(resps); !equalSizes(sizes, []int64{4 * mib, 4 * mib}) || obj != nil {
		t.Fatalf("first stream: persisted %v, resource %v", sizes, obj)
	}
	st, err := queryWriteStatus(ctxT(t), cc, id)
	if err != nil || st.GetPersistedSize() != 4*mib {
		t.Fatalf("QueryWriteStatus = %v, %v", st, err)
	}
	absent(t, cc, "resumable")

	// Second stream: the third message through WriteObject, which answers a
	// half-close with the persisted size.
	m := msgs[2]
	wresp, err := writeObject(ctxT(t), cc, &wire.WriteObjectRequest{
		FirstMessage: &wire.WriteObjectRequest_UploadId{UploadId: id},
		WriteOffset:  m.WriteOffset,
		Data:         &wire.WriteObjectRequest_ChecksummedData{ChecksummedData: m.GetChecksummedData()},
	})
	if err != nil || wresp.GetPersistedSize() != 6*mib {
		t.Fatalf("WriteObject = %v, %v", wresp, err)
	}

	// A stream that resumes at the wrong offset is refused; the session
	// survives.
	bad := clone(msgs[3])
	bad.FirstMessage = &wire.BidiWriteObjectRequest_UploadId{UploadId: id}
	bad.WriteOffset = 4 * mib
	_, err = bidi(ctxT(t), cc, bad)
	wantCode(t, err, codes.InvalidArgument)

	// Third stream: the rest and finish_write.
	rest := msgs[3:]
	rest[0].FirstMessage = &wire.BidiWriteObjectRequest_UploadId{UploadId: id}
	resps, err = bidi(ctxT(t), cc, rest...)
	if err != nil {
		t.Fatal(err)
	}
	if _, obj := persisted(resps); obj.GetSize() != int64(len(data)) {
		t.Fatalf("resource %v", obj)
	}
	sameBytes(t, "read", get(t, cc, "resumable"), data)

	// The session now reports the object, also to a retried finish_write.
	st, err = queryWriteStatus(ctxT(t), cc, id)
	if err != nil || st.GetResource().GetSize() != int64(len(data)) {
		t.Fatalf("QueryWriteStatus after finish = %v, %v", st, err)
	}
	resps, err = bidi(ctxT(t), cc, &wire.BidiWriteObjectRequest{
		FirstMessage: &wire.BidiWriteObjectRequest_UploadId{UploadId: id},
		WriteOffset:  int64(len(data)),
		FinishWrite:  true,
	})
	if _, obj := persisted(resps); err != nil || obj.GetSize() != int64(len(data)) {
		t.Fatalf("retried finish_write: %v, %v", resps, err)
	}

	_, err = queryWriteStatus(ctxT(t), cc, "no-such-upload")
	wantCode(t, err, codes.NotFound)
}

func TestResumableFailuresEndSession(t *testing.T) {
	_, cc := start(t)
	data := payload(3*mib, 5)
	i64 := func(v int64) *int64 { return &v }

	// A message with a bad CRC is refused, and the session keeps what it
	// had: the client can resume.
	id := startResumable(t, cc, spec("crc"))
	msgs := bidiChunks(data, mib, bidiUpload(id))
	*msgs[1].GetChecksummedData().Crc32C ^= 1
	_, err := bidi(ctxT(t), cc, msgs...)
	wantCode(t, err, codes.DataLoss)
	if st, err := queryWriteStatus(ctxT(t), cc, id); err != nil || st.GetPersistedSize() != mib {
		t.Fatalf("after a bad message: %v, %v", st, err)
	}

	// A whole-object checksum mismatch (declared when the session
	// started) ends the session.
	var req wire.StartResumableWriteRequest
	req.WriteObjectSpec = spec("sum")
	bad := uint32(7)
	req.ObjectChecksums = &wire.ObjectChecksums{Crc32C: &bad}
	var resp wire.StartResumableWriteResponse
	if err := cc.Invoke(ctxT(t), wire.MethodStartResumableWrite, &req, &resp); err != nil {
		t.Fatal(err)
	}
	msgs = bidiChunks(data, mib, bidiUpload(resp.GetUploadId()))
	msgs[len(msgs)-1].ObjectChecksums = nil
	_, err = bidi(ctxT(t), cc, msgs...)
	wantCode(t, err, codes.DataLoss)
	_, err = queryWriteStatus(ctxT(t), cc, resp.GetUploadId())
	wantCode(t, err, codes.NotFound)
	absent(t, cc, "sum")

	// A failed precondition at finish ends the session.
	put(t, cc, "taken", []byte("x"))
	s := spec("taken")
	s.IfGenerationMatch = i64(0)
	id = startResumable(t, cc, s)
	_, err = bidi(ctxT(t), cc, bidiChunks(data, mib, bidiUpload(id))...)
	wantCode(t, err, codes.FailedPrecondition)
	_, err = queryWriteStatus(ctxT(t), cc, id)
	wantCode(t, err, codes.NotFound)
	sameBytes(t, "untouched", get(t, cc, "taken"), []byte("x"))

	// StartResumableWrite validates its spec.
	for _, tc := range []struct {
		spec *wire.WriteObjectSpec
		code codes.Code
	}{
		{&wire.WriteObjectSpec{Resource: &wire.Object{Bucket: "projects/_/buckets/nope", Name: "x"}}, codes.NotFound},
		{&wire.WriteObjectSpec{Resource: &wire.Object{Bucket: bucketRes, Name: ""}}, codes.InvalidArgument},
		{&wire.WriteObjectSpec{Resource: &wire.Object{Bucket: bucketRes, Name: "x"}, Appendable: new(bool)}, codes.OK},
		{&wire.WriteObjectSpec{Resource: &wire.Object{Bucket: bucketRes, Name: "x"}, Appendable: new(true)}, codes.InvalidArgument},
		{&wire.WriteObjectSpec{Resource: &wire.Object{Bucket: bucketRes, Name: "x"}, ObjectSize: i64(-1)}, codes.InvalidArgument},
	} {
		err := cc.Invoke(ctxT(t), wire.MethodStartResumableWrite, &wire.StartResumableWriteRequest{WriteObjectSpec: tc.spec}, &resp)
		wantCode(t, err, tc.code)
	}
}

func TestFinalizedSessionsAreBounded(t *testing.T) {
	defer fakes.SetKeepFinalized(3)()
	_, cc := start(t)
	var ids []string
	for i := range 5 {
		id := startResumable(t, cc, spec("bounded"))
		if _, err := bidi(ctxT(t), cc, bidiChunks([]byte{byte(i)}, 10, bidiUpload(id))...); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for i, id := range ids {
		st, err := queryWriteStatus(ctxT(t), cc, id)
		if i < 2 {
			wantCode(t, err, codes.NotFound)
			continue
		}
		if err != nil || st.GetResource().GetSize() != 1 {
			t.Fatalf("session %d: %v, %v", i, st, err)
		}
	}
}
