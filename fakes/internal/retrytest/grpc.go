package retrytest

import (
	"context"
	"hash/crc32"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/header"
	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/internal/wire"
)

// Call is a gRPC call under a retry test: the instructions that apply
// while it runs (after-bytes for uploads, broken streams for reads).
type Call struct {
	s      *Tests
	id     string
	method string // the retry test method name

	fail      error       // a stream's status instruction, for its first receive
	broken    instruction // a read's broken stream, if hasBroken
	hasBroken bool
}

// GRPC applies the retry test that a gRPC call names in its
// x-retry-test-id metadata (Header), if the test runs over gRPC and has an
// instruction left for the call's method. A status instruction (its HTTP
// status mapped to a gRPC code as the testbench does) or a reset
// (codes.Unavailable) is consumed at once: a unary call fails with it, a
// stream once the server has received its first message, as GCS reads a
// request before it answers (a stream that failed sooner could make the
// client's first send fail with io.EOF rather than the status). For the
// other instructions it returns the Call that carries them out while the
// call runs (Wrap); nil if there is none. name is the retry test method
// whose instructions the call consumes, "" for none; bidiWrite says the
// call is a BidiWriteObject, which redirects apply to.
func (s *Tests) GRPC(ctx context.Context, name string, bidiWrite, stream bool) (*Call, error) {
	if name == "" || s.count.Load() == 0 {
		return nil, nil
	}
	id := header.FromIncoming(ctx, Header)
	if id == "" {
		return nil, nil
	}
	in, ok := s.peek(id, name, transportGRPC)
	if !ok {
		return nil, nil
	}
	rc := &Call{s: s, id: id, method: name}
	if in.kind == instrExpectToken {
		// The client followed a redirect if it sends the token; the
		// instruction after it applies to the same call.
		if !bidiWrite || !s.host.HasRoutingToken(ctx, in.token) {
			return nil, nil
		}
		rc.take(in)
		if in, ok = s.peek(id, name, transportGRPC); !ok {
			return nil, nil
		}
	}
	var err error
	switch in.kind {
	case instrStatus:
		if rc.take(in) {
			code, _ := grpcCode(in.status)
			err = status.Errorf(code, "fakes: retry test %s: %s", id, instructionText(in))
		}
	case instrReset:
		if rc.take(in) {
			err = status.Errorf(codes.Unavailable, "fakes: retry test %s: %s", id, instructionText(in))
		}
	case instrBroken:
		rc.broken, rc.hasBroken = in, true
	case instrRedirect:
		if !bidiWrite {
			return nil, nil
		}
		if rc.take(in) {
			err = s.host.Redirect("fakes: retry test "+id+": "+instructionText(in), in.token, nil, 0)
		}
	case instrRedirectHandle, instrExpectToken:
		if !bidiWrite {
			return nil, nil
		}
	}
	if err != nil && !stream {
		return nil, err
	}
	rc.fail = err
	return rc, nil
}

func (rc *Call) take(in instruction) bool { return rc.s.take(rc.id, rc.method, in) }

// RedirectWrite applies a redirect-send-handle-and-token instruction to an
// appendable write whose first message opened the object as generation
// gen, with write handle handle: it consumes it and returns the redirect
// error, or returns nil if the test's next instruction is another.
func (rc *Call) RedirectWrite(handle []byte, gen int64) error {
	in, ok := rc.s.peek(rc.id, rc.method, transportGRPC)
	if !ok || in.kind != instrRedirectHandle || !rc.take(in) {
		return nil
	}
	return rc.s.host.Redirect("fakes: retry test "+rc.id+": "+instructionText(in), in.token, handle, gen)
}

// HasBroken reports whether the call is a read under a broken-stream
// instruction, which ends it with BrokenError.
func (rc *Call) HasBroken() bool { return rc.hasBroken }

// BrokenAfter is the number of content bytes a read under a broken-stream
// instruction (HasBroken) sends before it ends with BrokenError.
func (rc *Call) BrokenAfter() int64 { return rc.broken.bytes }

// BrokenError consumes the broken-stream instruction and returns the error
// that ends the read.
func (rc *Call) BrokenError() error {
	rc.take(rc.broken)
	return status.Errorf(codes.Unavailable, "fakes: retry test %s: %s", rc.id, instructionText(rc.broken))
}

// retryStream is a stream under a retry test: it cuts uploads at the byte an
// after-bytes instruction names, and reads where a broken-stream
// instruction says.
type retryStream struct {
	grpc.ServerStream
	rc      *Call
	sent    int64 // content bytes sent by a read
	pending error // the error of the next RecvMsg, once an upload was cut
}

// SendMsg sends a ReadObject response, cut short where a broken-stream
// instruction says: the bytes up to the limit go out, then the read fails
// with codes.Unavailable, as in the testbench.
func (rs *retryStream) SendMsg(m any) error {
	if rs.rc.fail != nil {
		return rs.rc.fail
	}
	if rs.pending != nil {
		return rs.pending // an upload cut short gets no answer
	}
	resp, ok := m.(*wire.ReadObjectResponse)
	if !ok || !rs.rc.hasBroken || resp.ChecksummedData == nil {
		return rs.ServerStream.SendMsg(m)
	}
	content := resp.ChecksummedData.Content
	limit := rs.rc.broken.bytes
	if rs.sent+int64(len(content)) < limit {
		rs.sent += int64(len(content))
		return rs.ServerStream.SendMsg(m)
	}
	cut := content[:limit-rs.sent]
	crc := crc32.Checksum(cut, crc32c.Table)
	msg := &wire.ReadObjectResponse{
		Metadata:        resp.Metadata,
		ObjectChecksums: resp.ObjectChecksums,
		ContentRange:    resp.ContentRange,
		ChecksummedData: &wire.ChecksummedData{Content: cut, Crc32C: &crc},
	}
	if err := rs.ServerStream.SendMsg(msg); err != nil {
		return err
	}
	return rs.rc.BrokenError()
}

// RecvMsg receives a write message and applies a return-N-after-MK
// instruction, as the testbench does: the message whose content carries
// byte M is cut there, its first bytes are stored (for a resumable upload
// or an appendable object, persisted: the cut message of a
// BidiWriteObject is flushed), and the next receive fails with the code
// of status N. Nothing else of the message counts: not its finish_write
// or state_lookup. A message whose CRC32C does not match is left to the
// server, which rejects it.
func (rs *retryStream) RecvMsg(m any) error {
	if rs.rc.fail != nil {
		if rs.ServerStream.RecvMsg(m) == nil {
			rs.rc.s.host.NoteTarget(rs.Context(), m)
		}
		return rs.rc.fail
	}
	if rs.pending != nil {
		return rs.pending
	}
	if err := rs.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	var (
		offset int64
		data   *wire.ChecksummedData
		drop   func()
	)
	switch r := m.(type) {
	case *wire.WriteObjectRequest:
		offset, data = r.GetWriteOffset(), r.GetChecksummedData()
		drop = func() { r.FinishWrite = false }
	case *wire.BidiWriteObjectRequest:
		offset, data = r.GetWriteOffset(), r.GetChecksummedData()
		// Flush: an appendable object keeps the bytes before the cut,
		// as the testbench's does.
		drop = func() { r.FinishWrite, r.Flush, r.StateLookup = false, true, false }
	default:
		return nil
	}
	n := int64(len(data.GetContent()))
	if n == 0 {
		return nil
	}
	in, ok := rs.rc.s.peek(rs.rc.id, rs.rc.method, transportGRPC)
	if !ok || in.kind != instrStatusAfter || offset >= in.bytes || offset+n < in.bytes {
		return nil
	}
	if data.Crc32C != nil && crc32.Checksum(data.Content, crc32c.Table) != *data.Crc32C {
		return nil
	}
	if !rs.rc.take(in) {
		return nil
	}
	data.Content, data.Crc32C = data.Content[:in.bytes-offset], nil
	drop()
	code, _ := grpcCode(in.status)
	rs.pending = status.Errorf(code, "fakes: retry test %s: %s: the upload was cut after %d bytes", rs.rc.id, instructionText(in), in.bytes)
	return nil
}

// CallOf returns the retry test call of a stream (Wrap), or nil.
func CallOf(ss grpc.ServerStream) *Call {
	if rs, ok := ss.(*retryStream); ok {
		return rs.rc
	}
	return nil
}

// Wrap returns ss, or a stream over it that carries out the instructions
// of rc (GRPC) while the call runs: nil rc leaves ss as it is.
func Wrap(ss grpc.ServerStream, rc *Call) grpc.ServerStream {
	if rc == nil {
		return ss
	}
	return &retryStream{ServerStream: ss, rc: rc}
}
