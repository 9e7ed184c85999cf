package grpcx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/objup/objup/uploader/internal/xfer"

	"github.com/objup/objup/header"
	"github.com/objup/objup/internal/wire"
)

// OpenAppend opens a BidiWriteObject stream on u's appendable object and
// reads the service's first answer: the first message creates the object
// (WriteObjectSpec with appendable set) or, once it exists, takes up its
// generation with the write handle and routing token (AppendObjectSpec),
// with a flush and a state lookup. The answer, bounded by timeout, says
// what the service persisted: the stream goes on from there, once Start
// gives it its sink. The stream goes on the object's connection once it
// has one.
func (g *grpcTransport) OpenAppend(u *xfer.Request, at xfer.AppendOpen, timeout time.Duration) (xfer.AppendStream, xfer.AppendOpened, error) {
	var ans xfer.AppendOpened
	ctx, cancel := context.WithCancelCause(u.Ctx)
	c := g.routed(at.Route)
	if c != nil {
		c.useData()
	} else {
		c = g.pick(true)
	}
	octx := u.Outgoing(ctx)
	if at.Token != "" {
		octx = header.OutgoingContext(ctx, xfer.RequestParamsKey, u.Params+"&routing_token="+url.QueryEscape(at.Token))
	}
	st, err := wire.NewBidiWriteObjectStream(octx, c.ClientConn, g.callOpts...)
	if err != nil {
		c.doneData()
		cancel(err)
		return nil, ans, err
	}
	gs := &grpcStream{u: u, via: c, conn: c, stream: st, ctx: ctx, cancel: cancel,
		recvDone: make(chan struct{}), timeout: timeout, appendable: true}
	gs.timer = time.AfterFunc(timeout, func() { cancel(xfer.ErrChunkTimeout) })
	req := &wire.BidiWriteObjectRequest{Flush: true, StateLookup: true}
	if at.Exists {
		spec := &wire.AppendObjectSpec{Bucket: u.Resource(), Object: u.Object, Generation: at.Gen}
		if at.Handle != nil {
			spec.WriteHandle = &wire.BidiWriteHandle{Handle: at.Handle}
		}
		if at.Token != "" {
			spec.RoutingToken = &at.Token
		}
		req.FirstMessage = &wire.BidiWriteObjectRequest_AppendObjectSpec{AppendObjectSpec: spec}
	} else {
		req.FirstMessage = &wire.BidiWriteObjectRequest_WriteObjectSpec{WriteObjectSpec: u.Spec()}
	}
	resp := new(wire.BidiWriteObjectResponse)
	ans.Sent = true
	err = st.SendMsg(req)
	if err == nil {
		err = st.RecvMsg(resp)
	}
	gs.timer.Stop()
	if err != nil {
		close(gs.recvDone)
		if errors.Is(context.Cause(ctx), xfer.ErrChunkTimeout) {
			err = xfer.ErrChunkTimeout
		}
		cancel(err)
		c.doneData()
		return nil, ans, err
	}
	persisted := resp.GetPersistedSize()
	o := resp.GetResource()
	if o != nil {
		persisted = o.GetSize()
	}
	cs := resp.GetPersistedDataChecksums()
	if cs == nil && o != nil {
		cs = o.GetChecksums()
	}
	ans = xfer.AppendOpened{Sent: true, Route: c.route, Persisted: persisted, Object: o,
		CRC: cs.GetCrc32C(), HasCRC: cs != nil && cs.Crc32C != nil}
	if h := resp.GetWriteHandle(); h != nil {
		ans.Handle = h.GetHandle()
	}
	gs.sentTo, gs.armedTo = persisted, persisted
	gs.acked = persisted // before the receiver starts
	return gs, ans, nil
}

// Start gives the stream OpenAppend opened its sink and starts its
// receiver.
func (gs *grpcStream) Start(sink xfer.StreamSink) {
	gs.sink = sink
	go gs.receive()
}

// isFinalized reports whether o is a finalized object.
func isFinalized(o *wire.Object) bool { return o != nil && o.GetFinalizeTime() != nil }

// writeAppendable makes one attempt of a whole appendable object in one
// BidiWriteObject stream: the spec (appendable) with the first data, the
// rest in messages of up to 2 MiB, the last with finish_write and the
// object's checksums; then it waits for the finalized object. A small
// object in a zonal bucket costs one round trip, as a WriteObject would
// elsewhere.
func (g *grpcTransport) writeAppendable(u *xfer.Request, rs []*xfer.ChunkRef, timeout time.Duration) (o *wire.Object, sent bool, err error) {
	ctx, cancel := context.WithTimeout(u.AttemptCtx(), timeout)
	defer cancel()
	st, end, err := attemptStream(g, u, ctx, timeout, wire.NewBidiWriteObjectStream)
	defer func() { end(err) }()
	if err != nil {
		return nil, false, err
	}
	sent, err = sendParts(u, rs, st.SendMsg, func(req *wire.BidiWriteObjectRequest, offset int64, first, finish bool) {
		req.WriteOffset = offset
		if first {
			req.FirstMessage = &wire.BidiWriteObjectRequest_WriteObjectSpec{WriteObjectSpec: u.Spec()}
		}
		if finish {
			req.FinishWrite, req.ObjectChecksums = true, u.Checksums()
		}
	})
	if err == nil {
		err = st.CloseSend()
	}
	resp := new(wire.BidiWriteObjectResponse)
	for {
		// The stream's status tells why a send broke it.
		if rerr := st.RecvMsg(resp); rerr != nil {
			if rerr == io.EOF {
				rerr = fmt.Errorf("the service ended the stream before it finalized the object: %w", io.ErrUnexpectedEOF)
			}
			return nil, sent, rerr
		}
		if o := resp.GetResource(); isFinalized(o) {
			return o, sent, nil
		}
	}
}

// Drop tears down a stream that OpenAppend opened and that was never
// started (its receiver never ran).
func (gs *grpcStream) Drop() {
	gs.cancel(errors.New("upload closed"))
	close(gs.recvDone)
	gs.conn.doneData()
}
