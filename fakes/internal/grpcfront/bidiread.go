package grpcfront

import (
	"errors"
	"hash/crc32"
	"io"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/core"
	"github.com/objup/objup/fakes/internal/retrytest"
	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/internal/wire"
)

// bidiReadSpec is a BidiReadObjectSpec: the object a BidiReadObject stream
// reads.
type bidiReadSpec struct {
	Bucket, Object string
	generation     int64
	genMatch       *int64
	genNotMatch    *int64
	metaMatch      *int64
	metaNotMatch   *int64
	common         *wire.CommonObjectRequestParams
	handle         []byte // BidiReadHandle.handle
}

// readRange is a ReadRange: read_offset (negative: from the end),
// read_length (0: to the end) and read_id.
type readRange struct{ offset, length, id int64 }

// parseBidiRead decodes a BidiReadObjectRequest: read_object_spec (1) and
// read_ranges (8).
func ParseBidiRead(b []byte) (spec *bidiReadSpec, ranges []readRange, err error) {
	err = eachField(b, func(f field) error {
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			spec = &bidiReadSpec{}
			return parseBidiReadSpec(f.b, spec)
		case f.num == 8 && f.typ == protowire.BytesType:
			var r readRange
			err := eachField(f.b, func(f field) error {
				switch {
				case f.typ != protowire.VarintType:
				case f.num == 1:
					r.offset = int64(f.v)
				case f.num == 2:
					r.length = int64(f.v)
				case f.num == 3:
					r.id = int64(f.v)
				}
				return nil
			})
			ranges = append(ranges, r)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, nil, status.Errorf(codes.InvalidArgument, "fakes: BidiReadObjectRequest does not decode: %v", err)
	}
	return spec, ranges, nil
}

func parseBidiReadSpec(b []byte, spec *bidiReadSpec) error {
	return eachField(b, func(f field) error {
		switch {
		case f.typ == protowire.BytesType && f.num == 1:
			spec.Bucket = string(f.b)
		case f.typ == protowire.BytesType && f.num == 2:
			spec.Object = string(f.b)
		case f.typ == protowire.VarintType && f.num == 3:
			spec.generation = int64(f.v)
		case f.typ == protowire.VarintType && f.num == 4:
			spec.genMatch = int64Ptr(f.v)
		case f.typ == protowire.VarintType && f.num == 5:
			spec.genNotMatch = int64Ptr(f.v)
		case f.typ == protowire.VarintType && f.num == 6:
			spec.metaMatch = int64Ptr(f.v)
		case f.typ == protowire.VarintType && f.num == 7:
			spec.metaNotMatch = int64Ptr(f.v)
		case f.typ == protowire.BytesType && f.num == 8:
			spec.common = &wire.CommonObjectRequestParams{}
			return proto.Unmarshal(f.b, spec.common)
		case f.typ == protowire.BytesType && f.num == 13:
			return eachField(f.b, func(f field) error {
				if f.num == 1 && f.typ == protowire.BytesType {
					spec.handle = f.b
				}
				return nil
			})
		}
		return nil
	})
}

// readHandlePrefix starts the read handles the server hands out: they
// name the generation read, so that a stream reopened with the handle
// reads the same generation.
const readHandlePrefix = "fakes-generation-"

// bidiReader is the sending side of a BidiReadObject stream.
type bidiReader struct {
	ss   grpc.ServerStream
	obj  *store.Object
	head []byte // metadata (4) and read_handle (7), for the first response
	buf  []byte

	rc   *retrytest.Call // non-nil with a broken-stream instruction to apply
	sent int64           // content bytes sent, for rc
}

// bidiReadObject serves BidiReadObject: the first message names the object
// (and its generation and preconditions) and may ask for ranges; later
// messages ask for more ranges, until the client closes its side. The
// first response carries the object's metadata and a read handle; every
// range is answered in order, in messages of at most 2 MiB with their
// CRC32C, the last one marked range_end. A range that starts past the end
// of the object fails the stream with codes.OutOfRange. The content is
// copied once into each message.
func (s *Server) bidiReadObject(ss grpc.ServerStream) error {
	ctx := ss.Context()
	msg, err := recvRaw(ss)
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err != nil {
		return err
	}
	spec, ranges, err := ParseBidiRead(msg)
	if err != nil {
		return err
	}
	if spec == nil {
		return status.Error(codes.InvalidArgument, "fakes: the first BidiReadObjectRequest must set read_object_spec")
	}
	b, err := s.objectRef(ctx, spec.Bucket, spec.Object)
	if err != nil {
		return err
	}
	if err := api.CheckCommon(spec.common); err != nil {
		return err
	}
	gen := spec.generation
	if h, ok := strings.CutPrefix(string(spec.handle), readHandlePrefix); ok && gen == 0 {
		gen, _ = strconv.ParseInt(h, 10, 64)
	}
	obj, err := b.Get(spec.Object, gen)
	if err != nil {
		return err
	}
	if err := api.ReadConditions(spec.genMatch, spec.genNotMatch, spec.metaMatch, spec.metaNotMatch).Check(obj); err != nil {
		return err
	}
	meta, err := proto.Marshal(core.ToObject(b, obj))
	if err != nil {
		return status.Errorf(codes.Internal, "fakes: marshaling the object: %v", err)
	}
	r := &bidiReader{ss: ss, obj: obj}
	if rc := retrytest.CallOf(ss); rc != nil && rc.HasBroken() {
		r.rc = rc
	}
	r.head = appendBytesField(nil, 4, meta)
	r.head = appendBytesField(r.head, 7, appendBytesField(nil, 1, []byte(readHandlePrefix+strconv.FormatInt(obj.Generation(), 10))))
	if len(ranges) == 0 {
		if err := sendRaw(ss, r.head); err != nil {
			return err
		}
		r.head = nil
	}
	for {
		for _, rr := range ranges {
			if err := r.serve(rr); err != nil {
				return err
			}
		}
		msg, err := recvRaw(ss)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if spec, ranges, err = ParseBidiRead(msg); err != nil {
			return err
		}
		if spec != nil {
			return status.Error(codes.InvalidArgument, "fakes: read_object_spec is allowed only in the first message of a stream")
		}
	}
}

// serve sends one range.
func (r *bidiReader) serve(rr readRange) error {
	size := r.obj.Size()
	start := rr.offset
	if start < 0 {
		start = max(0, size+start)
	}
	if start > size || rr.length < 0 {
		return status.Errorf(codes.OutOfRange, "fakes: read range %d (offset %d, length %d) is outside the object's %d bytes", rr.id, rr.offset, rr.length, size)
	}
	end := size
	if rr.length > 0 {
		end = min(size, start+rr.length)
	}
	for off := start; ; {
		n := min(core.MaxChunk, end-off)
		last := off+n == end
		if r.rc != nil && r.sent+n >= r.rc.BrokenAfter() {
			if cut := r.rc.BrokenAfter() - r.sent; cut < n {
				n, last = cut, false
			}
		}
		if err := r.send(rr.id, off, n, last); err != nil {
			return err
		}
		r.sent += n
		if r.rc != nil && r.sent >= r.rc.BrokenAfter() {
			return r.rc.BrokenError()
		}
		off += n
		if last {
			return nil
		}
	}
}

// send sends content [off, off+n) of range id as one BidiReadObjectResponse
// with one ObjectRangeData: checksummed_data (1) {content (1), crc32c (2)},
// read_range (2) and range_end (3).
func (r *bidiReader) send(id, off, n int64, last bool) error {
	rrLen := sizeVarintField(1, uint64(off)) + sizeVarintField(2, uint64(n)) + sizeVarintField(3, uint64(id))
	cdLen := protowire.SizeTag(1) + protowire.SizeBytes(int(n)) + protowire.SizeTag(2) + protowire.SizeFixed32()
	ordLen := protowire.SizeTag(1) + protowire.SizeBytes(cdLen) + protowire.SizeTag(2) + protowire.SizeBytes(rrLen)
	if last {
		ordLen += sizeVarintField(3, 1)
	}
	b := append(r.buf[:0], r.head...)
	b = protowire.AppendTag(b, 6, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(ordLen))
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(cdLen))
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(n))
	at := len(b)
	b = slices.Grow(b, int(n)+protowire.SizeFixed32()+rrLen+16)[:at+int(n)]
	content := b[at:]
	r.obj.Read(content, off)
	b = protowire.AppendTag(b, 2, protowire.Fixed32Type)
	b = protowire.AppendFixed32(b, crc32.Checksum(content, crc32c.Table))
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(rrLen))
	b = appendVarintField(b, 1, uint64(off))
	b = appendVarintField(b, 2, uint64(n))
	b = appendVarintField(b, 3, uint64(id))
	if last {
		b = appendVarintField(b, 3, 1)
	}
	r.buf, r.head = b, nil
	return sendRaw(r.ss, b)
}
