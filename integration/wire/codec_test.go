package wire_test

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"sync/atomic"
	"testing"

	_ "cloud.google.com/go/storage" // registers the official google.storage.v2 descriptors
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/objup/objup/internal/wire"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// official returns a new, empty official google.storage.v2 message by name.
func official(t testing.TB, name string) proto.Message {
	t.Helper()
	mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName("google.storage.v2." + name))
	if err != nil {
		t.Fatalf("official descriptor %s: %v", name, err)
	}
	return mt.New().Interface()
}

// countingRelease records how many times gRPC released a payload.
type countingRelease struct{ puts atomic.Int32 }

func (*countingRelease) Get(int) *[]byte { return nil }
func (c *countingRelease) Put(*[]byte)   { c.puts.Add(1) }
func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	return b
}

func spec() *wire.WriteObjectSpec {
	return &wire.WriteObjectSpec{
		Resource: &wire.Object{
			Name:         "dir/obj.txt",
			Bucket:       "projects/_/buckets/b",
			ContentType:  "text/plain",
			CacheControl: "no-cache",
			Metadata:     map[string]string{"k": "v"},
		},
		IfGenerationMatch: proto.Int64(0),
		ObjectSize:        proto.Int64(5),
	}
}

func TestCodecWireCompatible(t *testing.T) {
	for _, size := range []int{0, 1, wire.CopyThreshold, wire.CopyThreshold + 1, 256 << 10, 2 << 20} {
		for _, msgName := range []string{"WriteObjectRequest", "BidiWriteObjectRequest"} {
			data := payload(size)
			crc := crc32.Checksum(data, castagnoli)
			var req, want proto.Message
			switch msgName {
			case "WriteObjectRequest":
				r := &wire.WriteObjectRequest{
					FirstMessage:    &wire.WriteObjectRequest_WriteObjectSpec{WriteObjectSpec: spec()},
					WriteOffset:     int64(size),
					FinishWrite:     true,
					ObjectChecksums: &wire.ObjectChecksums{Crc32C: proto.Uint32(crc), Md5Hash: []byte("0123456789abcdef")},
				}
				req = r
				w := proto.Clone(r).(*wire.WriteObjectRequest)
				w.Data = &wire.WriteObjectRequest_ChecksummedData{ChecksummedData: &wire.ChecksummedData{Content: data, Crc32C: proto.Uint32(crc)}}
				want = w
			case "BidiWriteObjectRequest":
				r := &wire.BidiWriteObjectRequest{
					FirstMessage: &wire.BidiWriteObjectRequest_UploadId{UploadId: "upload-1"},
					WriteOffset:  1 << 30,
					Flush:        true,
					StateLookup:  true,
				}
				req = r
				w := proto.Clone(r).(*wire.BidiWriteObjectRequest)
				w.Data = &wire.BidiWriteObjectRequest_ChecksummedData{ChecksummedData: &wire.ChecksummedData{Content: data, Crc32C: proto.Uint32(crc)}}
				want = w
			}
			t.Run(fmt.Sprintf("%s/%d", msgName, size), func(t *testing.T) {
				rel := &countingRelease{}
				msg := &wire.WriteMsg{Req: req, Data: &data, CRC32C: crc, HasCRC: true, Release: rel}
				bs, err := wire.Codec{}.Marshal(msg)
				if err != nil {
					t.Fatal(err)
				}
				if !msg.Marshaled() {
					t.Fatal("Marshaled() = false after Marshal")
				}
				if size > wire.CopyThreshold {
					// The payload travels as its own buffer over the caller's bytes.
					if len(bs) != 2 || &bs[1].ReadOnlyData()[0] != &data[0] {
						t.Fatalf("payload was copied: %d buffers", len(bs))
					}
				}
				got := bs.Materialize()
				bs.Free()
				if n := rel.puts.Load(); n != 1 {
					t.Fatalf("release called %d times, want 1", n)
				}

				// Our bytes decode with the official descriptors to the same values.
				off := official(t, msgName)
				if err := proto.Unmarshal(got, off); err != nil {
					t.Fatalf("official decode: %v", err)
				}
				ofr := off.ProtoReflect()
				cd := ofr.Get(ofr.Descriptor().Fields().ByName("checksummed_data")).Message()
				if c := cd.Get(cd.Descriptor().Fields().ByName("content")).Bytes(); !bytes.Equal(c, data) {
					t.Fatalf("official content differs (%d vs %d bytes)", len(c), len(data))
				}
				if c := cd.Get(cd.Descriptor().Fields().ByName("crc32c")).Uint(); uint32(c) != crc {
					t.Fatalf("official crc32c = %x, want %x", c, crc)
				}
				if len(ofr.GetUnknown()) != 0 {
					t.Fatalf("official decode left unknown fields: %x", ofr.GetUnknown())
				}
				// And the official encoding of those values decodes with ours to the
				// message we meant to send.
				ob, err := proto.Marshal(off)
				if err != nil {
					t.Fatal(err)
				}
				back := want.ProtoReflect().New().Interface()
				if err := proto.Unmarshal(ob, back); err != nil {
					t.Fatal(err)
				}
				if !proto.Equal(back, want) {
					t.Fatalf("round trip through the official message changed it:\n got %v\nwant %v", short(back), short(want))
				}
				// And ours decodes our own bytes to the same message.
				mine := want.ProtoReflect().New().Interface()
				if err := (wire.Codec{}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(got)}, mine); err != nil {
					t.Fatal(err)
				}
				if !proto.Equal(mine, want) {
					t.Fatal("own decode differs")
				}
			})
		}
	}
}

// TestCodecOfficialToOurs encodes official messages with the official types and
// decodes them with ours, for the messages a server reads and a client gets back.
func TestCodecOfficialToOurs(t *testing.T) {
	off := official(t, "StartResumableWriteRequest")
	r := off.ProtoReflect()
	spec := official(t, "WriteObjectSpec").ProtoReflect()
	obj := official(t, "Object").ProtoReflect()
	obj.Set(obj.Descriptor().Fields().ByName("name"), protoreflect.ValueOfString("o"))
	obj.Set(obj.Descriptor().Fields().ByName("bucket"), protoreflect.ValueOfString("projects/_/buckets/b"))
	obj.Set(obj.Descriptor().Fields().ByName("size"), protoreflect.ValueOfInt64(42))
	spec.Set(spec.Descriptor().Fields().ByName("resource"), protoreflect.ValueOfMessage(obj))
	spec.Set(spec.Descriptor().Fields().ByName("if_generation_match"), protoreflect.ValueOfInt64(7))
	r.Set(r.Descriptor().Fields().ByName("write_object_spec"), protoreflect.ValueOfMessage(spec))
	b, err := proto.Marshal(off)
	if err != nil {
		t.Fatal(err)
	}
	var got wire.StartResumableWriteRequest
	if err := (wire.Codec{}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, &got); err != nil {
		t.Fatal(err)
	}
	s := got.GetWriteObjectSpec()
	if s.GetResource().GetName() != "o" || s.GetResource().GetBucket() != "projects/_/buckets/b" || s.GetResource().GetSize() != 42 || s.GetIfGenerationMatch() != 7 || s.IfGenerationMatch == nil {
		t.Fatalf("decoded %v", &got)
	}
}

func TestCodecRejectsMisuse(t *testing.T) {
	data := payload(10)
	tests := []struct {
		name string
		req  proto.Message
	}{
		{"data already set", &wire.WriteObjectRequest{Data: &wire.WriteObjectRequest_ChecksummedData{}}},
		{"bidi data already set", &wire.BidiWriteObjectRequest{Data: &wire.BidiWriteObjectRequest_ChecksummedData{}}},
		{"not a write request", &wire.Object{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &wire.WriteMsg{Req: tc.req, Data: &data}
			if _, err := (wire.Codec{}).Marshal(m); err == nil {
				t.Fatal("Marshal succeeded")
			}
			if m.Marshaled() {
				t.Fatal("Marshaled() = true after a failed Marshal")
			}
		})
	}
}

func TestCodecName(t *testing.T) {
	if got := (wire.Codec{}).Name(); got != "proto" {
		t.Fatalf("Name() = %q, want proto (it becomes the content-subtype)", got)
	}
}

func short(m proto.Message) string {
	s := m.ProtoReflect()
	return string(s.Descriptor().FullName())
}

const benchSize = 2 << 20

func BenchmarkMarshal2MiB(b *testing.B) {
	data := payload(benchSize)
	crc := crc32.Checksum(data, castagnoli)
	b.Run("codec=objup", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(benchSize)
		rel := &countingRelease{}
		for b.Loop() {
			m := &wire.WriteMsg{
				Req:    &wire.BidiWriteObjectRequest{FirstMessage: &wire.BidiWriteObjectRequest_UploadId{UploadId: "upload-1"}, WriteOffset: 4 << 20, Flush: true, StateLookup: true},
				Data:   &data,
				CRC32C: crc, HasCRC: true, Release: rel,
			}
			bs, err := wire.Codec{}.Marshal(m)
			if err != nil {
				b.Fatal(err)
			}
			bs.Free()
		}
	})
	b.Run("codec=grpc-proto", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(benchSize)
		for b.Loop() {
			m := &wire.BidiWriteObjectRequest{
				FirstMessage: &wire.BidiWriteObjectRequest_UploadId{UploadId: "upload-1"}, WriteOffset: 4 << 20, Flush: true, StateLookup: true,
				Data: &wire.BidiWriteObjectRequest_ChecksummedData{ChecksummedData: &wire.ChecksummedData{Content: data, Crc32C: proto.Uint32(crc)}},
			}
			bs, err := wire.Codec{}.Marshal(m) // falls through to grpc-go's pooled proto codec
			if err != nil {
				b.Fatal(err)
			}
			bs.Free()
		}
	})
	b.Run("codec=proto.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(benchSize)
		for b.Loop() {
			m := &wire.BidiWriteObjectRequest{
				FirstMessage: &wire.BidiWriteObjectRequest_UploadId{UploadId: "upload-1"}, WriteOffset: 4 << 20, Flush: true, StateLookup: true,
				Data: &wire.BidiWriteObjectRequest_ChecksummedData{ChecksummedData: &wire.ChecksummedData{Content: data, Crc32C: proto.Uint32(crc)}},
			}
			if _, err := proto.Marshal(m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestWriteMsgParts: a payload of several buffers goes out as one message
// whose content is their concatenation, with no copy of the large parts,
// and each part is released exactly once, on its own.
func TestWriteMsgParts(t *testing.T) {
	for _, sizes := range [][]int{{300 << 10, 500, 256 << 10}, {256 << 10, 256 << 10, 256 << 10, 256 << 10}, {100, 200}, {2 << 10, 0}} {
		t.Run(fmt.Sprint(sizes), func(t *testing.T) {
			var parts [][]byte
			var all []byte
			for i, n := range sizes {
				p := bytes.Repeat([]byte{byte('a' + i)}, n)
				parts = append(parts, p)
				all = append(all, p...)
			}
			rels := make([]*countingRelease, len(parts))
			msg := &wire.WriteMsg{Req: &wire.BidiWriteObjectRequest{WriteOffset: 7}, CRC32C: crc32.Checksum(all, castagnoli), HasCRC: true}
			for i := range parts {
				rels[i] = &countingRelease{}
				if i == 0 {
					msg.Data, msg.Release = &parts[0], rels[0]
					continue
				}
				msg.More = append(msg.More, wire.Part{Data: &parts[i], Release: rels[i]})
			}
			bs, err := wire.Codec{}.Marshal(msg)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range bs[1:] {
				if d := b.ReadOnlyData(); len(d) > wire.CopyThreshold {
					found := false
					for i := range parts {
						if len(parts[i]) > 0 && &d[0] == &parts[i][0] {
							found = true
						}
					}
					if !found {
						t.Errorf("a %d-byte part was copied", len(d))
					}
				}
			}
			got := official(t, "BidiWriteObjectRequest")
			if err := proto.Unmarshal(bs.Materialize(), got); err != nil {
				t.Fatal(err)
			}
			m := got.ProtoReflect()
			cd := m.Get(m.Descriptor().Fields().ByName("checksummed_data")).Message()
			content := cd.Get(cd.Descriptor().Fields().ByName("content")).Bytes()
			if !bytes.Equal(content, all) {
				t.Fatalf("content of %d bytes, want the %d bytes of the parts in order", len(content), len(all))
			}
			if crc := uint32(cd.Get(cd.Descriptor().Fields().ByName("crc32c")).Uint()); crc != msg.CRC32C {
				t.Fatalf("crc32c %08x, want %08x", crc, msg.CRC32C)
			}
			bs.Free()
			for i, r := range rels {
				if n := r.puts.Load(); n != 1 {
					t.Errorf("part %d (%d bytes) released %d times, want 1", i, sizes[i], n)
				}
			}
		})
	}
}
