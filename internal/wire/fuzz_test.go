package wire_test

import (
	"bytes"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/objup/objup/internal/wire"
)

// FuzzDecodeWriteRequest feeds arbitrary bytes to the decoder of the write
// requests the fake server reads. Whatever decodes must re-encode through the
// zero-copy path to the same message.
func FuzzDecodeWriteRequest(f *testing.F) {
	data := []byte("hello, world")
	for _, m := range []proto.Message{
		&wire.BidiWriteObjectRequest{
			FirstMessage: &wire.BidiWriteObjectRequest_UploadId{UploadId: "u"},
			WriteOffset:  7, Flush: true, StateLookup: true,
			Data: &wire.BidiWriteObjectRequest_ChecksummedData{ChecksummedData: &wire.ChecksummedData{Content: data, Crc32C: proto.Uint32(3)}},
		},
		&wire.BidiWriteObjectRequest{FinishWrite: true, ObjectChecksums: &wire.ObjectChecksums{Crc32C: proto.Uint32(1), Md5Hash: make([]byte, 16)}},
		&wire.BidiWriteObjectRequest{FirstMessage: &wire.BidiWriteObjectRequest_WriteObjectSpec{WriteObjectSpec: &wire.WriteObjectSpec{
			Resource: &wire.Object{Name: "o", Bucket: "projects/_/buckets/b", Metadata: map[string]string{"k": "v"}}, IfGenerationMatch: proto.Int64(0),
		}}},
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0x22, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		var req wire.BidiWriteObjectRequest
		if err := (wire.Codec{}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, &req); err != nil {
			return // malformed input is rejected, not a crash
		}
		cd := req.GetChecksummedData()
		if cd == nil {
			return
		}
		// Re-encode with the payload sent by reference.
		hdr := proto.Clone(&req).(*wire.BidiWriteObjectRequest)
		hdr.Data = nil
		hdr.ProtoReflect().SetUnknown(nil)
		content := bytes.Clone(cd.GetContent())
		msg := &wire.WriteMsg{Req: hdr, Data: &content, CRC32C: cd.GetCrc32C(), HasCRC: cd.Crc32C != nil}
		bs, err := (wire.Codec{}).Marshal(msg)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		var back wire.BidiWriteObjectRequest
		if err := proto.Unmarshal(bs.Materialize(), &back); err != nil {
			t.Fatalf("decode of re-encoded message: %v", err)
		}
		bs.Free()
		want := proto.Clone(&req).(*wire.BidiWriteObjectRequest)
		want.ProtoReflect().SetUnknown(nil)
		if cd := want.GetChecksummedData(); cd != nil {
			cd.ProtoReflect().SetUnknown(nil)
		}
		if !proto.Equal(&back, want) {
			t.Fatalf("re-encoded message differs:\n got %v\nwant %v", &back, want)
		}
	})
}
