package grpcfront

import (
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/emptypb"
)

// The methods whose messages are not in internal/wire are served raw (see
// rpcs): their handlers read and write the protobuf encoding with
// protowire, and reuse wire's messages (Object, CommonObjectRequestParams)
// where they are embedded.

// recvRaw receives one message and returns its protobuf encoding. It uses
// emptypb.Empty, all of whose fields are unknown, so the codec keeps them
// as they came.
func recvRaw(ss grpc.ServerStream) ([]byte, error) {
	var m emptypb.Empty
	if err := ss.RecvMsg(&m); err != nil {
		return nil, err
	}
	return m.ProtoReflect().GetUnknown(), nil
}

// sendRaw sends the message whose protobuf encoding is b.
func sendRaw(ss grpc.ServerStream, b []byte) error {
	m := &emptypb.Empty{}
	m.ProtoReflect().SetUnknown(b)
	return ss.SendMsg(m)
}

// field is one field of a protobuf message: its number and type, and its
// value, in v for varint and fixed fields, in b for length-delimited ones.
type field struct {
	num protowire.Number
	typ protowire.Type
	v   uint64
	b   []byte
}

// eachField calls f for every field of the encoded message b, in order.
func eachField(b []byte, f func(field) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		fl := field{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			fl.v, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(b)
			fl.v = uint64(v)
		case protowire.Fixed64Type:
			fl.v, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			fl.b, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if err := f(fl); err != nil {
			return err
		}
	}
	return nil
}

// int64Ptr returns a pointer to a varint field's value as an int64.
func int64Ptr(v uint64) *int64 {
	x := int64(v)
	return &x
}

// appendVarintField appends field num with value v, a varint.
func appendVarintField(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// sizeVarintField is the encoded size of appendVarintField's field.
func sizeVarintField(num protowire.Number, v uint64) int {
	return protowire.SizeTag(num) + protowire.SizeVarint(v)
}

// appendBytesField appends field num with value v, length-delimited.
func appendBytesField(b []byte, num protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}
