package wire

import (
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	gproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Field numbers shared by WriteObjectRequest and BidiWriteObjectRequest, and
// those of ChecksummedData.
const (
	fieldChecksummedData = 4
	fieldContent         = 1
	fieldCRC32C          = 2
)

// CopyThreshold is the payload size up to which Codec copies the payload into the
// message's header buffer instead of sending it by reference. It equals grpc-go's
// pooling threshold: mem.NewBuffer does not track buffers this small.
const CopyThreshold = 1 << 10

// Part is one piece of a WriteMsg's payload: the bytes *Data, released
// through Release (see WriteMsg).
type Part struct {
	Data    *[]byte
	Release mem.BufferPool
}

// WriteMsg is a WriteObjectRequest or BidiWriteObjectRequest whose payload Codec
// sends without copying it.
//
// Req carries every field but the data: its ChecksummedData must be nil. Codec
// appends checksummed_data itself, with CRC32C when HasCRC is set and Data
// followed by each of More as the content: a payload made of several buffers
// (consecutive chunks of an upload) goes out as one message without being
// joined. CRC32C is the checksum of the whole content. Data must point to the
// exact payload (len(*Data) bytes are sent), and so must each part of More.
//
// Each part is released on its own: gRPC calls a part's Release.Put once it
// no longer reads that part; Data's release is Release.
// Ownership: once Codec has marshaled the message (Marshaled reports it), gRPC
// reads *Data until it calls Release.Put(Data), which it does exactly once, from
// any goroutine, possibly before SendMsg returns. Until then the caller must not
// modify the bytes. If Marshaled is false after SendMsg returned (the stream
// refused the message before encoding it), gRPC never saw Data and Release is not
// called. Payloads of at most CopyThreshold bytes are copied during Marshal and
// released before it returns. A WriteMsg is good for one SendMsg.
type WriteMsg struct {
	Req     proto.Message
	Data    *[]byte
	More    []Part
	CRC32C  uint32
	HasCRC  bool
	Release mem.BufferPool

	marshaled bool
}

// Marshaled reports whether Codec has taken the message's payload. It is safe to
// read on the goroutine that called SendMsg, after SendMsg returned.
func (m *WriteMsg) Marshaled() bool { return m.marshaled }

// Codec is a gRPC encoding.CodecV2 that marshals *WriteMsg with its payload as a
// separate mem.Buffer over the caller's bytes, so a chunk is never copied while
// marshaling; every other message goes through grpc-go's proto codec unchanged.
//
// Its Name is "proto", so the content-subtype on the wire stays the standard one.
// Install it on a connection or call (grpc.ForceCodecV2), never process-wide.
type Codec struct{}

var _ encoding.CodecV2 = Codec{}

// base is grpc-go's own proto codec (registered by grpc's init).
var base = encoding.GetCodecV2(gproto.Name)

// CallOption returns the call option that makes a call use Codec.
func CallOption() grpc.CallOption { return grpc.ForceCodecV2(Codec{}) }

// Name returns "proto".
func (Codec) Name() string { return gproto.Name }

// Unmarshal decodes with grpc-go's proto codec.
func (Codec) Unmarshal(data mem.BufferSlice, v any) error { return base.Unmarshal(data, v) }

// Marshal encodes v. For a *WriteMsg the result is a header buffer followed by the
// payload itself; any other value is encoded by grpc-go's proto codec.
func (Codec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(*WriteMsg)
	if !ok {
		return base.Marshal(v)
	}
	return m.marshal()
}

var errWriteMsg = errors.New("wire: WriteMsg needs a *WriteObjectRequest or *BidiWriteObjectRequest without ChecksummedData")

func (m *WriteMsg) marshal() (mem.BufferSlice, error) {
	switch r := m.Req.(type) {
	case *WriteObjectRequest:
		if r.Data != nil {
			return nil, errWriteMsg
		}
	case *BidiWriteObjectRequest:
		if r.Data != nil {
			return nil, errWriteMsg
		}
	default:
		return nil, fmt.Errorf("%w, got %T", errWriteMsg, m.Req)
	}
	var n int
	if m.Data != nil {
		n = len(*m.Data)
	}
	for _, p := range m.More {
		if p.Data == nil {
			return nil, errNilPart
		}
		n += len(*p.Data)
	}
	// checksummed_data { crc32c = 2 (fixed32); content = 1 (bytes) }, content last.
	inner := protowire.SizeTag(fieldContent) + protowire.SizeBytes(n)
	if m.HasCRC {
		inner += protowire.SizeTag(fieldCRC32C) + protowire.SizeFixed32()
	}
	opts := proto.MarshalOptions{}
	reqSize := opts.Size(m.Req)
	hdrSize := reqSize + protowire.SizeTag(fieldChecksummedData) + protowire.SizeVarint(uint64(inner)) + inner - n
	small := n <= CopyThreshold
	total := hdrSize
	if small {
		total += n
	}
	hdr := make([]byte, 0, total)
	hdr, err := opts.MarshalAppend(hdr, m.Req)
	if err != nil {
		return nil, err
	}
	hdr = protowire.AppendTag(hdr, fieldChecksummedData, protowire.BytesType)
	hdr = protowire.AppendVarint(hdr, uint64(inner))
	if m.HasCRC {
		hdr = protowire.AppendTag(hdr, fieldCRC32C, protowire.Fixed32Type)
		hdr = protowire.AppendFixed32(hdr, m.CRC32C)
	}
	hdr = protowire.AppendTag(hdr, fieldContent, protowire.BytesType)
	hdr = protowire.AppendVarint(hdr, uint64(n))
	m.marshaled = true
	if small {
		if m.Data != nil {
			hdr = append(hdr, *m.Data...)
			if m.Release != nil {
				m.Release.Put(m.Data)
			}
		}
		for _, p := range m.More {
			hdr = append(hdr, *p.Data...)
			if p.Release != nil {
				p.Release.Put(p.Data)
			}
		}
		return mem.BufferSlice{mem.SliceBuffer(hdr)}, nil
	}
	if len(m.More) == 0 {
		return mem.BufferSlice{mem.SliceBuffer(hdr), mem.NewBuffer(m.Data, releaseOrNop(m.Release))}, nil
	}
	bs := make(mem.BufferSlice, 0, 2+len(m.More))
	bs = append(bs, mem.SliceBuffer(hdr))
	if m.Data != nil {
		bs = append(bs, payloadBuffer(m.Data, m.Release))
	}
	for _, p := range m.More {
		bs = append(bs, payloadBuffer(p.Data, p.Release))
	}
	return bs, nil
}

var errNilPart = errors.New("wire: WriteMsg part with a nil Data")

// payloadBuffer is one part of a payload as a mem.Buffer. A part of at most
// CopyThreshold bytes is copied and released at once, since mem.NewBuffer
// would not track it.
func payloadBuffer(data *[]byte, release mem.BufferPool) mem.Buffer {
	if len(*data) > CopyThreshold {
		return mem.NewBuffer(data, releaseOrNop(release))
	}
	b := mem.SliceBuffer(append([]byte(nil), *data...))
	if release != nil {
		release.Put(data)
	}
	return b
}

func releaseOrNop(p mem.BufferPool) mem.BufferPool {
	if p == nil {
		return nopPool{}
	}
	return p
}

// nopPool is the release of a payload whose owner waits for the RPC's end.
type nopPool struct{}

func (nopPool) Get(int) *[]byte { return nil }
func (nopPool) Put(*[]byte)     {}
