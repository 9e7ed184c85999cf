package uploader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/objup/objup/header"
	"github.com/objup/objup/internal/wire"
)

// Appendable is what an appendable upload (WithAppendable, or
// Client.TakeOver) knows of its object on the service: its generation, the
// latest write handle and routing token, and what the last stream found
// persisted when it opened. The Writer sets it up; the gRPC transport keeps
// it current (a stream's receiver stores each new handle, a redirect's
// error the new route), under mu.
type Appendable struct {
	Unfinalized bool // WithoutFinalize: Close leaves the object unfinalized
	Takeover    bool // the object exists (Client.TakeOver): gen names it
	Opened      bool // a stream that creates the object went out

	Mu        sync.Mutex
	Gen       int64
	Handle    []byte
	Token     string       // the routing token of the last redirect
	Persisted int64        // the service's persisted size when the last stream opened
	CRC       uint32       // the CRC32C of those bytes, if hasCRC
	HasCRC    bool         // the service gave persisted_data_checksums
	Object    *wire.Object // the object as the last open returned it, if it did
	Created   bool         // a stream created the object (the first open succeeded)
	Conn      *grpcConn    // the connection of the object's streams
	Ready     *grpcStream  // a stream reopened by queryStatus, for openStream to adopt
}

// Route returns the generation, handle and routing token to open a stream
// with, and whether the object exists (a stream created it, or it was
// taken over): else the stream creates it.
func (a *Appendable) Route() (gen int64, handle []byte, token string, exists bool) {
	a.Mu.Lock()
	defer a.Mu.Unlock()
	return a.Gen, a.Handle, a.Token, a.Created || a.Takeover
}

// Answered takes in an answer of the object's stream: a new write handle,
// which the service sends now and then.
func (a *Appendable) Answered(resp *wire.BidiWriteObjectResponse) {
	a.Mu.Lock()
	if h := resp.GetWriteHandle(); h != nil {
		a.Handle = append(a.Handle[:0:0], h.GetHandle()...)
	}
	a.Mu.Unlock()
}

// DropReady tears down a stream that queryStatus reopened and no
// openStream took (its receiver never ran).
func (a *Appendable) DropReady() {
	a.Mu.Lock()
	gs := a.Ready
	a.Ready = nil
	a.Mu.Unlock()
	if gs != nil {
		gs.cancel(errors.New("upload closed"))
		close(gs.recvDone)
		gs.conn.doneData()
	}
}

// Redirected takes the route of a redirect out of err, if err is one (an
// ABORTED status with a BidiWriteObjectRedirectedError), notes it in ev
// (if not nil), and reports whether it was.
func (a *Appendable) Redirected(err error, ev *uploadEvents) bool {
	r := RedirectOf(err)
	if r == nil {
		return false
	}
	if ev != nil {
		ev.Redirected(r.GetRoutingToken())
	}
	a.Mu.Lock()
	if r.RoutingToken != nil {
		a.Token = r.GetRoutingToken()
	}
	if r.WriteHandle != nil {
		a.Handle = append(a.Handle[:0:0], r.GetWriteHandle().GetHandle()...)
	}
	if r.Generation != nil {
		// The object exists: the stream is opened again on it.
		a.Gen, a.Created = r.GetGeneration(), true
	}
	a.Mu.Unlock()
	return true
}

// redirectTypeURL names the detail of a redirect.
const redirectTypeURL = "type.googleapis.com/google.storage.v2.BidiWriteObjectRedirectedError"

// RedirectOf returns the BidiWriteObjectRedirectedError that err carries,
// or nil. internal/wire registers its messages under a package of its own,
// so the detail is decoded here by its type URL.
func RedirectOf(err error) *wire.BidiWriteObjectRedirectedError {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Aborted {
		return nil
	}
	for _, d := range st.Proto().GetDetails() {
		if d.GetTypeUrl() != redirectTypeURL {
			continue
		}
		r := new(wire.BidiWriteObjectRedirectedError)
		if proto.Unmarshal(d.GetValue(), r) == nil {
			return r
		}
	}
	return nil
}

// IsRedirect reports whether err asks the client to open its stream again
// elsewhere.
func IsRedirect(err error) bool { return RedirectOf(err) != nil }

// openAppend opens a BidiWriteObject stream on u's appendable object and
// reads the service's first answer: the first message creates the object
// (WriteObjectSpec with appendable set) or, once it exists, takes up its
// generation with the write handle and routing token (AppendObjectSpec),
// with a flush and a state lookup. The answer, bounded by timeout, says
// what the service persisted: the stream goes on from there, once run
// gives it its sink. The stream goes on the object's connection once it has
// one.
func (g *grpcTransport) openAppend(u *Request, timeout time.Duration) (*grpcStream, error) {
	a := u.App
	gen, handle, token, exists := a.Route()
	ctx, cancel := context.WithCancelCause(u.Ctx)
	a.Mu.Lock()
	c := a.Conn
	a.Mu.Unlock()
	if c != nil {
		c.useData()
	} else {
		c = g.pick(true)
	}
	octx := u.Outgoing(ctx)
	if token != "" {
		octx = header.OutgoingContext(ctx, RequestParamsKey, u.Params+"&routing_token="+url.QueryEscape(token))
	}
	st, err := wire.NewBidiWriteObjectStream(octx, c.ClientConn, g.callOpts...)
	if err != nil {
		c.doneData()
		cancel(err)
		return nil, err
	}
	gs := &grpcStream{u: u, via: c, conn: c, stream: st, ctx: ctx, cancel: cancel,
		recvDone: make(chan struct{}), timeout: timeout, app: a}
	gs.timer = time.AfterFunc(timeout, func() { cancel(errChunkTimeout) })
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
		if errors.Is(context.Cause(ctx), errChunkTimeout) {
			err = errChunkTimeout
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
	a.Conn, a.Persisted, a.Created = c, persisted, true
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
	gs.acked.Store(persisted)
	return gs, nil
}

// appendStatus is queryStatus for an appendable object: a new stream on the
// object, whose first answer tells what the service persisted (bytes sent
// and not flushed when a stream broke may be lost); openStream then goes on
// with that stream. A finish that went out may have finalized the object
// before its answer was lost: then the object itself is looked up, and
// returned if it is this upload's generation of size bytes.
func (g *grpcTransport) appendStatus(u *Request, size int64, timeout time.Duration) (int64, *wire.Object, error) {
	a := u.App
	a.DropReady()
	a.Mu.Lock()
	lost := a.Opened && !a.Created && !a.Takeover
	a.Mu.Unlock()
	if lost {
		// The first open went out and got no answer (see errFirstOpenLost).
		return 0, nil, &Error{Op: grpcNames.Stream, Bucket: u.Bucket, Object: u.Object, Code: codes.Aborted, unknown: true, Err: errFirstOpenLost}
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
	return gs.acked.Load(), nil, nil
}

// errFirstOpenLost is the failure of an appendable upload whose first
// stream, the one that creates the object, lost its answer: the service
// may have created the object, or may still (a front end that read the
// stream passes it on). Opening the object again would not help: that
// stream, arriving late, creates a new generation that replaces the one
// the upload goes on with, and every byte flushed there is lost. Nor can
// the object be taken up: only the generation the lost answer carried
// would tell it from another writer's. So the upload stops with an
// unknown outcome; a Writer made anew creates the object again.
var errFirstOpenLost = errors.New("the answer to the stream that creates the object was lost: the object may exist, and nothing tells it from another writer's")

// openAppendStream is openStream for an appendable object: it goes on with
// the stream appendStatus opened, or opens one (the object's first, or a
// takeover's).
func (g *grpcTransport) openAppendStream(u *Request, persisted int64, sink StreamSink, timeout time.Duration) (Stream, error) {
	a := u.App
	a.Mu.Lock()
	gs := a.Ready
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
	if got := gs.acked.Load(); got != persisted && persisted != 0 {
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
func (g *grpcTransport) writeAppendable(u *Request, rs []*ChunkRef, timeout time.Duration) (o *wire.Object, sent bool, err error) {
	ctx, cancel := context.WithTimeout(u.AttemptCtx(), timeout)
	defer cancel()
	st, end, err := attemptStream(g, u, ctx, timeout, wire.NewBidiWriteObjectStream)
	defer func() { end(err) }()
	if err != nil {
		return nil, false, err
	}
	u.Scratch.Spec.ObjectSize = nil // an appendable object's size is what its writes make it
	base := rs[0].Offset
	i, rel := 0, 0
	for first := true; first || i < len(rs); first = false {
		msg, req := NewReqMsg[wire.BidiWriteObjectRequest]()
		req.WriteOffset = rs[min(i, len(rs)-1)].Offset + int64(rel) - base
		if first {
			req.FirstMessage = &wire.BidiWriteObjectRequest_WriteObjectSpec{WriteObjectSpec: u.Spec()}
		}
		var crc uint32
		crc, i, rel = u.fill(msg, rs, i, rel)
		if i == len(rs) {
			req.FinishWrite, req.ObjectChecksums = true, u.Checksums()
		}
		msg.CRC32C, msg.HasCRC = crc, !u.NoCRC()
		err = st.SendMsg(&msg.WriteMsg)
		u.Life.Sent(msg)
		sent = sent || msg.Marshaled()
		if err != nil {
			break
		}
	}
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
