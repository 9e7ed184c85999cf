package sink

import (
	"encoding/binary"
	"errors"

	"google.golang.org/grpc/encoding"
	gproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/internal/wire"
)

// sinkCodec is the sink's gRPC codec. It decodes a *sinkMsg without copying
// the content (see sinkMsg.decode); every other message, and every reply,
// goes through grpc-go's proto codec. Its name is "proto", the standard
// content-subtype.
type codec struct{}

var protoCodec = encoding.GetCodecV2(gproto.Name)

func (codec) Name() string { return gproto.Name }

func (codec) Marshal(v any) (mem.BufferSlice, error) { return protoCodec.Marshal(v) }

func (codec) Unmarshal(data mem.BufferSlice, v any) error {
	if m, ok := v.(*sinkMsg); ok {
		return m.decode(data)
	}
	return protoCodec.Unmarshal(data, v)
}

// Field numbers of WriteObjectRequest and BidiWriteObjectRequest
// (checksummed_data), and of ChecksummedData.
const (
	sinkFieldData    = 4
	sinkFieldContent = 1
	sinkFieldCRC32C  = 2
)

// sinkMsg is one received WriteObjectRequest or BidiWriteObjectRequest. The
// codec decodes every field but checksummed_data into req or bidiReq, and
// leaves the content where gRPC received it: data holds a reference on the
// message's received buffers, and the content is n bytes from offset off.
// The handler reads it with content and gives the buffers back with release,
// before the next RecvMsg.
type sinkMsg struct {
	bidi       bool
	copyDecode bool

	req     wire.WriteObjectRequest
	bidiReq wire.BidiWriteObjectRequest
	hdr     []byte       // the fields but checksummed_data, as they were encoded
	f       api.WriteMsg // the decoded fields, kept here so that handling them allocates nothing

	hasData bool // checksummed_data is present
	hasCRC  bool
	sentCRC uint32
	data    mem.BufferSlice // referenced until release; nil when n == 0
	off, n  int
}

// fields returns the decoded fields of m.
func (m *sinkMsg) fields() api.WriteMsg {
	if m.bidi {
		return api.BidiMsgOf(&m.bidiReq)
	}
	return api.WriteMsgOf(&m.req)
}

// content calls f with the content, piece by piece, in order.
func (m *sinkMsg) content(f func([]byte)) {
	off, left := m.off, m.n
	for _, b := range m.data {
		if left == 0 {
			return
		}
		p := b.ReadOnlyData()
		if off >= len(p) {
			off -= len(p)
			continue
		}
		p = p[off:]
		off = 0
		if len(p) > left {
			p = p[:left]
		}
		f(p)
		left -= len(p)
	}
}

// release gives the received buffers back to gRPC's pool.
func (m *sinkMsg) release() {
	if m.data != nil {
		m.data.Free()
		m.data = nil
	}
}

var (
	errSinkTruncated = errors.New("fakes: sink: truncated message")
	errSinkVarint    = errors.New("fakes: sink: bad varint")
	errSinkTag       = errors.New("fakes: sink: bad field tag")
	// errSinkUnusual is an encoding the view decoder leaves to the proto
	// decoder: a repeated checksummed_data or content, or a group.
	errSinkUnusual = errors.New("fakes: sink: unusual encoding")
)

// decode decodes data into m. The content is not copied: m keeps a
// reference on data, which release drops. An unusual but valid encoding
// (checksummed_data or its content given twice, groups) is decoded by the
// proto decoder instead, copying the content.
func (m *sinkMsg) decode(data mem.BufferSlice) error {
	m.release()
	m.hasData, m.hasCRC, m.sentCRC, m.off, m.n = false, false, 0, 0, 0
	if m.copyDecode {
		return m.decodeCopy(data)
	}
	err := m.decodeView(data)
	if errors.Is(err, errSinkUnusual) {
		m.hasData, m.hasCRC, m.sentCRC, m.off, m.n = false, false, 0, 0, 0
		return m.decodeCopy(data)
	}
	if err != nil {
		return err
	}
	if m.n > 0 {
		data.Ref()
		m.data = data
	}
	return nil
}

func (m *sinkMsg) decodeView(data mem.BufferSlice) error {
	r := newSliceReader(data)
	hdr := m.hdr[:0]
	for r.remaining() > 0 {
		start := len(hdr)
		var (
			tag uint64
			err error
		)
		// The tag as it was encoded: the proto decoder keeps unknown
		// fields byte for byte.
		if tag, hdr, err = r.appendVarint(hdr); err != nil {
			return err
		}
		num, typ := protowire.DecodeTag(tag)
		if num <= 0 {
			return errSinkTag
		}
		if num == sinkFieldData && typ == protowire.BytesType {
			hdr = hdr[:start]
			if m.hasData {
				return errSinkUnusual
			}
			m.hasData = true
			if err := m.decodeData(&r); err != nil {
				return err
			}
			continue
		}
		if hdr, err = r.appendField(hdr, typ); err != nil {
			return err
		}
	}
	m.hdr = hdr
	if m.bidi {
		return proto.Unmarshal(hdr, &m.bidiReq)
	}
	return proto.Unmarshal(hdr, &m.req)
}

// decodeData decodes the ChecksummedData at r, noting where its content is.
func (m *sinkMsg) decodeData(r *sliceReader) error {
	l, err := r.length()
	if err != nil {
		return err
	}
	end := r.pos + l
	content := false
	for r.pos < end {
		tag, err := r.varint()
		if err != nil {
			return err
		}
		num, typ := protowire.DecodeTag(tag)
		switch {
		case num <= 0:
			return errSinkTag
		case num == sinkFieldContent && typ == protowire.BytesType:
			if content {
				return errSinkUnusual
			}
			content = true
			n, err := r.length()
			if err != nil {
				return err
			}
			if n > end-r.pos {
				return errSinkTruncated
			}
			m.off, m.n = r.pos, n
			if err := r.skip(n); err != nil {
				return err
			}
		case num == sinkFieldCRC32C && typ == protowire.Fixed32Type:
			var b [4]byte
			err = r.read(b[:])
			m.sentCRC, m.hasCRC = binary.LittleEndian.Uint32(b[:]), true
		default:
			_, err = r.appendField(nil, typ) // an unknown field: skipped
		}
		if err != nil {
			return err
		}
	}
	if r.pos != end {
		return errSinkTruncated
	}
	return nil
}

// decodeCopy decodes data as grpc-go's proto codec does: joined into one
// buffer, then unmarshaled, which copies the content into a new slice.
func (m *sinkMsg) decodeCopy(data mem.BufferSlice) error {
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	var cd *wire.ChecksummedData
	if m.bidi {
		if err := proto.Unmarshal(buf.ReadOnlyData(), &m.bidiReq); err != nil {
			return err
		}
		cd = m.bidiReq.GetChecksummedData()
		m.bidiReq.Data = nil
	} else {
		if err := proto.Unmarshal(buf.ReadOnlyData(), &m.req); err != nil {
			return err
		}
		cd = m.req.GetChecksummedData()
		m.req.Data = nil
	}
	if cd == nil {
		return nil
	}
	m.hasData = true
	if cd.Crc32C != nil {
		m.hasCRC, m.sentCRC = true, *cd.Crc32C
	}
	if m.n = len(cd.Content); m.n > 0 {
		m.data = mem.BufferSlice{mem.SliceBuffer(cd.Content)}
	}
	return nil
}
