package grpcx

import (
	"context"
	"time"

	"github.com/objup/objup/uploader/internal/xfer"
	"google.golang.org/protobuf/proto"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/internal/wire"
)

// invoke makes one attempt of a unary call, bounded by timeout, in the
// upload's attempt context, on a connection of the small calls (see pick).
// It runs on the Writer's goroutine only.
func (g *grpcTransport) invoke(u *xfer.Request, method string, req, resp any, timeout time.Duration) error {
	return g.invokeOn(g.pick(false), u, method, req, resp, timeout)
}

// invokeOn is invoke on c, which pick or use counted.
//
// An attempt that times out or whose upload's context ends is cancelled:
// gRPC resets its stream (RST_STREAM), never the connection, which other
// uploads' streams share. A connection that died silently is found by
// gRPC keepalive and the kernel's TCP_USER_TIMEOUT, which gRPC sets on the
// connections it dials.
func (g *grpcTransport) invokeOn(c *grpcConn, u *xfer.Request, method string, req, resp any, timeout time.Duration) error {
	at := &u.Call.Attempt
	at.Arm(u.Outgoing(u.AttemptCtx()), timeout)
	err := c.Invoke(at, method, req, resp, g.callOpts...)
	at.Disarm()
	c.done()
	return err
}

// WriteObject sends rs as one WriteObject call.
//
// An object of one chunk of at most 2 MiB goes out as a unary call (one
// request message, one response): on the wire it is a client stream of one
// message, and gRPC starts no goroutine for it. A larger one (a chunk size
// over 2 MiB, or the chunks of a parallel upload's part) is several
// messages of at most 2 MiB on one WriteObject client stream, each made of
// consecutive pieces of the chunks with its CRC32C combined from theirs,
// the last with finish_write; gRPC starts one goroutine for such a stream.
func (g *grpcTransport) WriteObject(u *xfer.Request, rs []*xfer.ChunkRef, timeout time.Duration) (*wire.Object, bool, error) {
	if u.App != nil {
		return g.writeAppendable(u, rs, timeout)
	}
	if len(rs) == 1 && len(rs[0].Data) <= xfer.MaxMessage {
		return g.writeUnary(u, rs[0], timeout)
	}
	return g.writeStream(u, rs, timeout)
}

// writeUnary makes one attempt of a one-message WriteObject. sent reports
// whether the request may have left the process.
func (g *grpcTransport) writeUnary(u *xfer.Request, r *xfer.ChunkRef, timeout time.Duration) (o *wire.Object, sent bool, err error) {
	sc := &u.Call
	sc.First.WriteObjectSpec = u.Spec()
	sc.Req.FirstMessage, sc.Req.FinishWrite, sc.Req.ObjectChecksums = &sc.First, true, u.Checksums()
	msg := u.Life.NewMsg()
	if len(r.Data) > 0 {
		u.Life.Add(msg, r, r.Data)
	}
	msg.Req, msg.CRC32C, msg.HasCRC = &sc.Req, r.CRC32C, !u.NoCRC()
	sc.Resp.Reset()
	err = g.invoke(u, wire.MethodWriteObject, &msg.WriteMsg, &sc.Resp, timeout)
	u.Life.Sent(msg)
	return sc.Resp.GetResource(), msg.Marshaled(), err
}

// writeStream makes one attempt of a WriteObject client stream of several
// messages, each of up to 2 MiB of consecutive pieces of rs.
func (g *grpcTransport) writeStream(u *xfer.Request, rs []*xfer.ChunkRef, timeout time.Duration) (o *wire.Object, sent bool, err error) {
	ctx, cancel := context.WithTimeout(u.AttemptCtx(), timeout)
	defer cancel()
	st, end, err := attemptStream(g, u, ctx, timeout, wire.NewWriteObjectStream)
	defer func() { end(err) }()
	if err != nil {
		return nil, false, err
	}
	sent, err = sendParts(u, rs, st.SendMsg, func(req *wire.WriteObjectRequest, offset int64, first, finish bool) {
		req.WriteOffset = offset
		if first {
			req.FirstMessage = &wire.WriteObjectRequest_WriteObjectSpec{WriteObjectSpec: u.Spec()}
		}
		if finish {
			req.FinishWrite, req.ObjectChecksums = true, u.Checksums()
		}
	})
	if err != nil {
		// The stream's status tells why it broke.
		_, err = st.CloseAndRecv()
		return nil, sent, err
	}
	resp, err := st.CloseAndRecv()
	return resp.GetResource(), sent, err
}

// sendParts sends the consecutive chunks rs on a stream with send, as
// messages of up to 2 MiB of consecutive pieces, each with its CRC32C
// combined from theirs; set fills each message's request (R) with its
// offset from the first chunk's, and says whether it is the first and
// whether it finishes the object. sent reports whether a message may have
// left the process.
func sendParts[R any, P interface {
	*R
	proto.Message
}](u *xfer.Request, rs []*xfer.ChunkRef, send func(any) error, set func(req P, offset int64, first, finish bool)) (sent bool, err error) {
	base := rs[0].Offset
	i, rel := 0, 0 // the chunk and the offset in it where the next message starts
	for first := true; first || i < len(rs); first = false {
		msg, req := xfer.NewReqMsg[R, P]()
		offset := rs[min(i, len(rs)-1)].Offset + int64(rel) - base
		var crc uint32
		crc, i, rel = fill(u, msg, rs, i, rel)
		set(req, offset, first, i == len(rs))
		msg.CRC32C, msg.HasCRC = crc, !u.NoCRC()
		err = send(&msg.WriteMsg)
		u.Life.Sent(msg)
		sent = sent || msg.Marshaled()
		if err != nil {
			return sent, err
		}
	}
	return sent, nil
}

// attemptStream opens, with open, the write stream of one attempt of u on
// a data connection, in ctx (the attempt's context, bounded by timeout). The
// caller calls end with the attempt's error once it is over: end gives the
// connection back. An abandoned attempt is cancelled with ctx, which
// resets its stream only.
func attemptStream[S interface{ Context() context.Context }](g *grpcTransport, u *xfer.Request, ctx context.Context, timeout time.Duration,
	open func(context.Context, grpc.ClientConnInterface, ...grpc.CallOption) (S, error)) (st S, end func(error), err error) {
	c := g.pick(true)
	end = func(error) { c.doneData() }
	st, err = open(u.Outgoing(ctx), c.ClientConn, g.callOpts...)
	return st, end, err
}

// fill adds to msg up to 2 MiB of consecutive pieces of rs, from offset
// rel of chunk i on, and returns their CRC32C and where the next message
// starts.
func fill(u *xfer.Request, msg *xfer.OutMsg, rs []*xfer.ChunkRef, i, rel int) (crc uint32, nextI, nextRel int) {
	size := 0
	for i < len(rs) && msg.Parts() < xfer.MaxParts {
		r := rs[i]
		piece := rel / chunker.MaxPiece
		end := min((piece+1)*chunker.MaxPiece, len(r.Data))
		data := r.Data[rel:end]
		if size > 0 && size+len(data) > xfer.MaxMessage {
			break
		}
		if len(data) > 0 {
			pc := r.PieceCRC32C(piece)
			if rel != piece*chunker.MaxPiece {
				pc = crc32c.Checksum(data)
			}
			crc = crc32c.Combine(crc, pc, int64(len(data)))
			u.Life.Add(msg, r, data)
			size += len(data)
		}
		rel = end
		if rel == len(r.Data) {
			i, rel = i+1, 0
		}
	}
	return crc, i, rel
}

// ComposeObject makes one attempt of ComposeObject into u's object.
func (g *grpcTransport) ComposeObject(u *xfer.Request, srcs []xfer.Source, timeout time.Duration) (*wire.Object, error) {
	spec := u.Spec()
	req := &wire.ComposeObjectRequest{
		Destination:              spec.GetResource(),
		DestinationPredefinedAcl: spec.GetPredefinedAcl(),
		IfGenerationMatch:        spec.IfGenerationMatch,
		IfMetagenerationMatch:    spec.IfMetagenerationMatch,
		KmsKey:                   spec.GetResource().GetKmsKey(),
		ObjectChecksums:          u.Checksums(),
		SourceObjects:            make([]*wire.ComposeObjectRequest_SourceObject, len(srcs)),
	}
	for i, s := range srcs {
		req.SourceObjects[i] = &wire.ComposeObjectRequest_SourceObject{Name: s.Name, Generation: s.Gen}
	}
	o := new(wire.Object)
	if err := g.invoke(u, wire.MethodComposeObject, req, o, timeout); err != nil {
		return nil, err
	}
	return o, nil
}

// DeleteObject makes one attempt of DeleteObject.
func (g *grpcTransport) DeleteObject(u *xfer.Request, name string, gen int64, timeout time.Duration) error {
	req := &wire.DeleteObjectRequest{Bucket: u.Resource(), Object: name, Generation: gen}
	return g.invoke(u, wire.MethodDeleteObject, req, new(emptypb.Empty), timeout)
}

// GetObject makes one attempt of GetObject.
func (g *grpcTransport) GetObject(u *xfer.Request, name string, timeout time.Duration) (*wire.Object, error) {
	req := &wire.GetObjectRequest{Bucket: u.Resource(), Object: name}
	o := new(wire.Object)
	if err := g.invoke(u, wire.MethodGetObject, req, o, timeout); err != nil {
		return nil, err
	}
	return o, nil
}

func (g *grpcTransport) StartUpload(u *xfer.Request, timeout time.Duration) (string, error) {
	if u.App != nil {
		// An appendable object has no session: its first stream creates
		// it (see openAppend).
		return "", nil
	}
	req := &wire.StartResumableWriteRequest{WriteObjectSpec: u.Spec()}
	var resp wire.StartResumableWriteResponse
	if err := g.invoke(u, wire.MethodStartResumableWrite, req, &resp, timeout); err != nil {
		return "", err
	}
	return resp.GetUploadId(), nil
}

// QueryStatus asks on the connection of the session's streams, when it has
// had one: a call that completed there after the old stream was torn down
// proves that connection's writer went past that stream's messages, so
// what gRPC still holds of them it never releases, and they are released
// by force (see outMsg). Every stream of a session takes that connection
// (see openStream), so this covers all of its messages; a call on another
// connection would prove nothing.
func (g *grpcTransport) QueryStatus(u *xfer.Request, id string, route xfer.Route, size int64, timeout time.Duration) (int64, *wire.Object, error) {
	var st wire.QueryWriteStatusResponse
	req := &wire.QueryWriteStatusRequest{UploadId: id}
	c := g.routed(route)
	streamed := c != nil
	if streamed {
		c.use()
	} else {
		c = g.pick(false)
	}
	if err := g.invokeOn(c, u, wire.MethodQueryWriteStatus, req, &st, timeout); err != nil {
		return 0, nil, err
	}
	if streamed {
		u.Life.ForceRelease()
	}
	if o := st.GetResource(); o != nil {
		return o.GetSize(), o, nil
	}
	return st.GetPersistedSize(), nil, nil
}

// CancelUpload makes one attempt of CancelResumableWrite, in u's context
// or, once that ended, bounded by timeout alone (an abandoned session is
// cancelled in the background).
func (g *grpcTransport) CancelUpload(u *xfer.Request, id string, timeout time.Duration) error {
	if u.App != nil || id == "" {
		// An appendable object has no session to cancel.
		return nil
	}
	cu := u
	if u.Ctx.Err() != nil {
		cu = u.Detached(context.WithoutCancel(u.Ctx))
	}
	return g.invoke(cu, wire.MethodCancelResumableWrite, &wire.CancelResumableWriteRequest{UploadId: id}, new(wire.CancelResumableWriteResponse), timeout)
}

// Window: a stream's messages are acknowledged one by one, so the Window is
// what may be unacknowledged.
func (g *grpcTransport) Window(perSend int64) int64 { return perSend }
