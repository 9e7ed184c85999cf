package grpcx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/objup/objup/uploader/internal/xfer"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/header"
	"github.com/objup/objup/internal/wire"
)

// openAppend opens a BidiWriteObject stream on u's appendable object and
// reads the service's first answer: the first message creates the object
// (WriteObjectSpec with appendable set) or, once it exists, takes up its
// generation with the write handle and routing token (AppendObjectSpec),
// with a flush and a state lookup. The answer, bounded by timeout, says
// what the service persisted: the stream goes on from there, once run
// gives it its sink. The stream goes on the object's connection once it has
// one.
func (g *grpcTransport) openAppend(u *xfer.Request, timeout time.Duration) (*grpcStream, error) {
	a := u.App
	gen, handle, token, exists := a.Route()
	ctx, cancel := context.WithCancelCause(u.Ctx)
	a.Mu.Lock()
	c := g.routed(a.Conn)
	a.Mu.Unlock()
	if c != nil {
		c.useData()
	} else {
		c = g.pick(true)
	}
	octx := u.Outgoing(ctx)
	if token != "" {
		octx = header.OutgoingContext(ctx, xfer.RequestParamsKey, u.Params+"&routing_token="+url.QueryEscape(token))
	}
	st, err := wire.NewBidiWriteObjectStream(octx, c.ClientConn, g.callOpts...)
	if err != nil {
		c.doneData()
		cancel(err)
		return nil, err
	}
	gs := &grpcStream{u: u, via: c, conn: c, stream: st, ctx: ctx, cancel: cancel,
		recvDone: make(chan struct{}), timeout: timeout, app: a}
	gs.timer = time.AfterFunc(timeout, func() { cancel(xfer.ErrChunkTimeout) })
	req := &wire.BidiWriteObjectRequest{Flush: true, StateLookup: true}
	if exists {
		spec := &wire.AppendObjectSpec{Bucket: u.Resource(), Object: u.Object, Generation: gen}
		if handle != nil {
			spec.WriteHandle = &wire.BidiWriteHandle{Handle: handle}
		}
		if token != "" {
			spec.RoutingToken = &token
		}
		req.FirstMessage = &wire.BidiWriteObjectRequest_AppendObjectSpec{AppendObjectSpec: spec}
	} else {
		req.FirstMessage = &wire.BidiWriteObjectRequest_WriteObjectSpec{WriteObjectSpec: u.Spec()}
		a.Mu.Lock()
		a.Opened = true
		a.Mu.Unlock()
	}
	resp := new(wire.BidiWriteObjectResponse)
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
		if a.Redirected(err, u.Life.Ev) && !exists {
			// An answer: the service did not create the object here
			// (it would have named the generation).
			a.Mu.Lock()
			a.Opened = false
			a.Mu.Unlock()
		}
		cancel(err)
		c.doneData()
		return nil, err
	}
	persisted := resp.GetPersistedSize()
	o := resp.GetResource()
	if o != nil {
		persisted = o.GetSize()
	}
	a.Mu.Lock()
	a.Conn, a.Persisted, a.Created = c.route, persisted, true
	if o != nil {
		a.Object, a.Gen = o, o.GetGeneration()
	}
	cs := resp.GetPersistedDataChecksums()
	if cs == nil && o != nil {
		cs = o.GetChecksums()
	}
	a.CRC, a.HasCRC = cs.GetCrc32C(), cs != nil && cs.Crc32C != nil
	if h := resp.GetWriteHandle(); h != nil {
		a.Handle = append(a.Handle[:0:0], h.GetHandle()...)
	}
	a.Mu.Unlock()
	gs.sentTo, gs.armedTo = persisted, persisted
	gs.acked = persisted // before the receiver starts
	return gs, nil
}

// appendStatus is queryStatus for an appendable object: a new stream on the
// object, whose first answer tells what the service persisted (bytes sent
// and not flushed when a stream broke may be lost); openStream then goes on
// with that stream. A finish that went out may have finalized the object
// before its answer was lost: then the object itself is looked up, and
// returned if it is this upload's generation of size bytes.
func (g *grpcTransport) appendStatus(u *xfer.Request, size int64, timeout time.Duration) (int64, *wire.Object, error) {
	a := u.App
	a.DropReady()
	a.Mu.Lock()
	lost := a.Opened && !a.Created && !a.Takeover
	a.Mu.Unlock()
	if lost {
		// The first open went out and got no answer (see
		// xfer.ErrFirstOpenLost).
		return 0, nil, xfer.ErrFirstOpenLost
	}
	gs, err := g.openAppend(u, timeout)
	if err != nil {
		if size >= 0 && status.Code(err) == codes.FailedPrecondition {
			if o, gerr := g.GetObject(u, u.Object, timeout); gerr == nil && o.GetSize() == size && o.GetFinalizeTime() != nil {
				a.Mu.Lock()
				ours := o.GetGeneration() == a.Gen
				a.Mu.Unlock()
				if ours {
					return size, o, nil
				}
			}
		}
		return 0, nil, err
	}
	u.Life.ForceRelease()
	a.Mu.Lock()
	a.Ready = gs
	o := a.Object
	a.Mu.Unlock()
	if isFinalized(o) {
		// A finish whose answer was lost finalized the object: the
		// reopened stream answered with it, and ends.
		a.DropReady()
		return o.GetSize(), o, nil
	}
	return gs.ackedNow(), nil, nil
}

// openAppendStream is openStream for an appendable object: it goes on with
// the stream appendStatus opened, or opens one (the object's first, or a
// takeover's).
func (g *grpcTransport) openAppendStream(u *xfer.Request, persisted int64, sink xfer.StreamSink, timeout time.Duration) (xfer.Stream, error) {
	a := u.App
	a.Mu.Lock()
	gs, _ := a.Ready.(*grpcStream)
	a.Ready = nil
	a.Mu.Unlock()
	if gs == nil {
		var err error
		if gs, err = g.openAppend(u, timeout); err != nil {
			return nil, err
		}
	}
	gs.sink = sink
	go gs.receive()
	if got := gs.ackedNow(); got != persisted && persisted != 0 {
		err := fmt.Errorf("the service reports %d bytes persisted, %d were expected", got, persisted)
		gs.Teardown(err)
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	return gs, nil
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
	u.Scratch.Spec.ObjectSize = nil // an appendable object's size is what its writes make it
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

// Drop tears down a stream that appendStatus reopened and no openStream
// adopted (its receiver never ran).
func (gs *grpcStream) Drop() {
	gs.cancel(errors.New("upload closed"))
	close(gs.recvDone)
	gs.conn.doneData()
}
