package uploader

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	gtransport "google.golang.org/api/transport/grpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/netcut"
)

// grpcTransport sends uploads over storage v2 gRPC: a one-shot WriteObject,
// or a resumable session (StartResumableWrite, QueryWriteStatus) whose data
// streams on BidiWriteObject.
//
// It keeps a pool of connections (option.WithGRPCConnectionPool) for the
// data and, beside a pool of two or more, one more connection, the lane,
// for small calls; each call takes the least loaded connection of its kind
// (see pick). A front end caps the concurrent streams of one HTTP/2
// connection (about 100 at GCS), and a call on a full connection would
// queue behind the others instead of using an idle one; and a small call
// on a connection busy with 2 MiB messages waits behind their bytes in the
// connection's socket.
type grpcTransport struct {
	pool     closer
	conns    []*grpcConn // the data's
	lane     *grpcConn   // the small calls', or nil
	callOpts []grpc.CallOption
	mu       sync.Mutex     // orders the picks of data calls
	cut      *netcut.Dialer // dialled the connections, unless the caller passed its own: resets them (see abandoned)
}

// closer closes a pool of connections.
type closer interface{ Close() error }

// grpcConn is one connection of the pool and its calls in flight.
type grpcConn struct {
	*grpc.ClientConn
	active  atomic.Int32 // calls in flight
	streams atomic.Int32 // of which carry an object's data
	_       [56]byte     // keep counters of different connections off one cache line
}

// newGRPCTransport takes the pool's connections: Conn returns them in turn.
func newGRPCTransport(p gtransport.ConnPool, lane *grpc.ClientConn, callOpts []grpc.CallOption, cut *netcut.Dialer) *grpcTransport {
	g := &grpcTransport{pool: p, callOpts: callOpts, cut: cut}
	if lane != nil {
		g.lane = &grpcConn{ClientConn: lane}
	}
	seen := make(map[*grpc.ClientConn]bool)
	for range p.Num() {
		if c := p.Conn(); !seen[c] {
			seen[c] = true
			g.conns = append(g.conns, &grpcConn{ClientConn: c})
		}
	}
	return g
}

// streamsPerConn is the number of concurrent streams a GCS front end
// takes on one HTTP/2 connection (SETTINGS_MAX_CONCURRENT_STREAMS, commonly
// 100): past it, small calls overflow from the lane to the pool.
const streamsPerConn = 100

// pick returns a connection for a call, with the call counted; done (or
// doneData) must be called when the call ends. Calls that carry an object's
// data (a resumable session's stream, a one-shot write of several messages)
// take the pool's connection with the fewest such calls, the last of those:
// large uploads spread evenly, so n connections take n times a front end's
// cap of streams. Small calls (one-shot writes of one message, session
// starts, status queries) take the lane while it has fewer than
// streamsPerConn calls in flight; past that, or without a lane, the pool's
// connection with the fewest data calls, the first of those, then the
// fewest calls in flight, so a lone caller keeps to one warm connection.
func (g *grpcTransport) pick(data bool) *grpcConn {
	conns := g.conns
	best := conns[0]
	switch {
	case !data && g.lane != nil && g.lane.active.Load() < streamsPerConn:
		best = g.lane
	case data:
		// Under a lock, so concurrent sessions never pile onto one
		// connection; a data call is one per session, not per message.
		g.mu.Lock()
		best = conns[len(conns)-1]
		n := best.streams.Load()
		for i := len(conns) - 2; i >= 0; i-- {
			if m := conns[i].streams.Load(); m < n {
				best, n = conns[i], m
			}
		}
		best.streams.Add(1)
		g.mu.Unlock()
	case len(conns) > 1:
		ns, na := best.streams.Load(), best.active.Load()
		for _, c := range conns[1:] {
			ms, ma := c.streams.Load(), c.active.Load()
			if ms < ns || ms == ns && ma < na {
				best, ns, na = c, ms, ma
			}
		}
	}
	best.active.Add(1)
	return best
}

// done ends a call that pick counted.
func (c *grpcConn) done() { c.active.Add(-1) }

// doneData ends a data call that pick counted.
func (c *grpcConn) doneData() {
	c.streams.Add(-1)
	c.active.Add(-1)
}

func (g *grpcTransport) close() error {
	err := g.pool.Close()
	if g.lane != nil {
		err = errors.Join(err, g.lane.Close())
	}
	return err
}

func (g *grpcTransport) names() *callNames { return &grpcNames }

// invoke makes one attempt of a unary call, bounded by timeout, in the
// upload's attempt context, on a connection of the small calls (see pick).
// It runs on the Writer's goroutine only.
func (g *grpcTransport) invoke(u *upload, method string, req, resp any, timeout time.Duration) error {
	return g.invokeOn(g.pick(false), u, method, req, resp, timeout)
}

// invokeOn is invoke on c, which pick or use counted.
func (g *grpcTransport) invokeOn(c *grpcConn, u *upload, method string, req, resp any, timeout time.Duration) error {
	u.via = c
	u.attempt.Arm(u.outgoing(u.attemptCtx()), timeout)
	err := c.Invoke(&u.attempt, method, req, resp, g.callOpts...)
	timedOut := u.attempt.TimedOut()
	u.attempt.Disarm()
	c.done()
	if err != nil {
		g.abandoned(u, timedOut, timeout, nil)
	}
	return err
}

// abandoned handles an attempt that failed. If no answer came within the
// attempt timeout, the connection that carried it is presumed dead and is
// reset, so that what the kernel still holds of the attempt never reaches
// the service after a retry or a cleanup (see netcut), and the retry goes
// out on a new connection: the connection at local when the stream said
// where it went, else every connection that has received nothing for the
// whole attempt (a live one always hears something: answers, window
// updates, keepalive). An attempt that the upload's context ended was
// cancelled, which resets its stream, not the connection other uploads
// share: behind a stalled path that reset waits too, so the attempt stays
// open until fenced.
func (g *grpcTransport) abandoned(u *upload, timedOut bool, timeout time.Duration, local net.Addr) {
	switch {
	case u.ctx.Err() != nil && !u.scratch.settle:
		u.scratch.open = true
	case timedOut && local != nil && g.cut.Cut(local):
	case timedOut:
		// A stall that began after the attempt did leaves its connection
		// heard from within the timeout: the cut may miss it, so the
		// attempt stays open until fenced.
		g.cut.CutSilent(timeout)
		u.scratch.open = true
	}
}

// writeObject sends rs as one WriteObject call.
//
// An object of one chunk of at most 2 MiB goes out as a unary call (one
// request message, one response): on the wire it is a client stream of one
// message, and gRPC starts no goroutine for it. A larger one (a chunk size
// over 2 MiB, or the chunks of a parallel upload's part) is several
// messages of at most 2 MiB on one WriteObject client stream, each made of
// consecutive pieces of the chunks with its CRC32C combined from theirs,
// the last with finish_write; gRPC starts one goroutine for such a stream.
func (g *grpcTransport) writeObject(u *upload, rs []*chunkRef, timeout time.Duration) (*wire.Object, bool, error) {
	if u.app != nil {
		return g.writeAppendable(u, rs, timeout)
	}
	if len(rs) == 1 && len(rs[0].Data) <= maxMessage {
		return g.writeUnary(u, rs[0], timeout)
	}
	return g.writeStream(u, rs, timeout)
}

// writeUnary makes one attempt of a one-message WriteObject. sent reports
// whether the request may have left the process.
func (g *grpcTransport) writeUnary(u *upload, r *chunkRef, timeout time.Duration) (o *wire.Object, sent bool, err error) {
	sc := &u.scratch
	sc.first.WriteObjectSpec = &sc.spec
	sc.req.FirstMessage, sc.req.FinishWrite, sc.req.ObjectChecksums = &sc.first, true, u.checksums()
	msg := u.life.newMsg()
	if len(r.Data) > 0 {
		u.life.add(msg, r, r.Data)
	}
	msg.Req, msg.CRC32C, msg.HasCRC = &sc.req, r.CRC32C, !u.noCRC()
	sc.resp.Reset()
	err = g.invoke(u, wire.MethodWriteObject, &msg.WriteMsg, &sc.resp, timeout)
	u.life.sent(msg)
	return sc.resp.GetResource(), msg.Marshaled(), err
}

// writeStream makes one attempt of a WriteObject client stream of several
// messages, each of up to 2 MiB of consecutive pieces of rs.
func (g *grpcTransport) writeStream(u *upload, rs []*chunkRef, timeout time.Duration) (o *wire.Object, sent bool, err error) {
	ctx, cancel := context.WithTimeout(u.attemptCtx(), timeout)
	defer cancel()
	// A settled stream (see attemptCtx) is cancelled with the upload only
	// until its last message is handed to gRPC; the lock orders the two.
	var fin struct {
		sync.Mutex
		final, cancelled bool
	}
	if u.scratch.settle {
		stop := context.AfterFunc(u.ctx, func() {
			fin.Lock()
			if !fin.final {
				fin.cancelled = true
				cancel()
			}
			fin.Unlock()
		})
		defer stop()
	}
	c := g.pick(true)
	defer c.doneData()
	u.via = c
	var local net.Addr
	defer func() {
		if err != nil {
			g.abandoned(u, ctx.Err() == context.DeadlineExceeded && u.ctx.Err() == nil, timeout, local)
		}
	}()
	st, err := wire.NewWriteObjectStream(u.outgoing(ctx), c.ClientConn, g.callOpts...)
	if err != nil {
		return nil, false, err
	}
	if p, ok := peer.FromContext(st.Context()); ok {
		local = p.LocalAddr
	}
	base := rs[0].Offset
	i, rel := 0, 0 // the chunk and the offset in it where the next message starts
	for first := true; first || i < len(rs); first = false {
		msg, req := newReqMsg[wire.WriteObjectRequest]()
		req.WriteOffset = rs[min(i, len(rs)-1)].Offset + int64(rel) - base
		if first {
			req.FirstMessage = &wire.WriteObjectRequest_WriteObjectSpec{WriteObjectSpec: u.spec()}
		}
		var crc uint32
		crc, i, rel = u.fill(msg, rs, i, rel)
		if i == len(rs) {
			req.FinishWrite, req.ObjectChecksums = true, u.checksums()
			fin.Lock()
			fin.final = !fin.cancelled
			fin.Unlock()
			if !fin.final {
				u.life.sent(msg)
				_, err = st.CloseAndRecv()
				return nil, sent, cmp.Or(u.ctx.Err(), err)
			}
		}
		msg.CRC32C, msg.HasCRC = crc, !u.noCRC()
		err = st.SendMsg(&msg.WriteMsg)
		u.life.sent(msg)
		sent = sent || msg.Marshaled()
		if err != nil {
			// The stream's status tells why it broke.
			_, err = st.CloseAndRecv()
			return nil, sent, err
		}
	}
	resp, err := st.CloseAndRecv()
	return resp.GetResource(), sent, err
}

// fill adds to msg up to 2 MiB of consecutive pieces of rs, from offset
// rel of chunk i on, and returns their CRC32C and where the next message
// starts.
func (u *upload) fill(msg *outMsg, rs []*chunkRef, i, rel int) (crc uint32, nextI, nextRel int) {
	size := 0
	for i < len(rs) && msg.parts() < maxParts {
		r := rs[i]
		piece := rel / chunker.MaxPiece
		end := min((piece+1)*chunker.MaxPiece, len(r.Data))
		data := r.Data[rel:end]
		if size > 0 && size+len(data) > maxMessage {
			break
		}
		if len(data) > 0 {
			pc := r.PieceCRC32C(piece)
			if rel != piece*chunker.MaxPiece {
				pc = crc32c.Checksum(data)
			}
			crc = crc32c.Combine(crc, pc, int64(len(data)))
			u.life.add(msg, r, data)
			size += len(data)
		}
		rel = end
		if rel == len(r.Data) {
			i, rel = i+1, 0
		}
	}
	return crc, i, rel
}

// composeObject makes one attempt of ComposeObject into u's object.
func (g *grpcTransport) composeObject(u *upload, srcs []source, timeout time.Duration) (*wire.Object, error) {
	spec := u.spec()
	req := &wire.ComposeObjectRequest{
		Destination:              spec.GetResource(),
		DestinationPredefinedAcl: spec.GetPredefinedAcl(),
		IfGenerationMatch:        spec.IfGenerationMatch,
		IfMetagenerationMatch:    spec.IfMetagenerationMatch,
		KmsKey:                   spec.GetResource().GetKmsKey(),
		ObjectChecksums:          u.checksums(),
		SourceObjects:            make([]*wire.ComposeObjectRequest_SourceObject, len(srcs)),
	}
	for i, s := range srcs {
		req.SourceObjects[i] = &wire.ComposeObjectRequest_SourceObject{Name: s.name, Generation: s.gen}
	}
	o := new(wire.Object)
	if err := g.invoke(u, wire.MethodComposeObject, req, o, timeout); err != nil {
		return nil, err
	}
	return o, nil
}

// deleteObject makes one attempt of DeleteObject.
func (g *grpcTransport) deleteObject(u *upload, name string, gen int64, timeout time.Duration) error {
	req := &wire.DeleteObjectRequest{Bucket: u.resource(), Object: name, Generation: gen}
	return g.invoke(u, wire.MethodDeleteObject, req, new(emptypb.Empty), timeout)
}

// getObject makes one attempt of GetObject.
func (g *grpcTransport) getObject(u *upload, name string, timeout time.Duration) (*wire.Object, error) {
	req := &wire.GetObjectRequest{Bucket: u.resource(), Object: name}
	o := new(wire.Object)
	if err := g.invoke(u, wire.MethodGetObject, req, o, timeout); err != nil {
		return nil, err
	}
	return o, nil
}

// fence asks, on every connection of the transport, for the object's
// attributes: any answer of the service on a connection proves that it
// handled what the connection carried before, the abandoned attempts'
// streams and their resets included (an attempt may have gone out on any
// connection: u.via names only the last). A connection with no answer
// within timeout is presumed stalled and cut, with every other connection
// silent that long, so what it holds is dropped.
func (g *grpcTransport) fence(u *upload, timeout time.Duration) bool {
	if !u.scratch.open {
		return true
	}
	conns := g.conns[:len(g.conns):len(g.conns)]
	if g.lane != nil {
		conns = append(conns, g.lane)
	}
	silent := atomic.Bool{}
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			pu := u.detached(u.ctx)
			c.active.Add(1)
			req := &wire.GetObjectRequest{Bucket: u.resource(), Object: u.object}
			if err := g.invokeOn(c, pu, wire.MethodGetObject, req, new(wire.Object), timeout); err != nil && !fromService(err) {
				silent.Store(true)
			}
		})
	}
	wg.Wait()
	if silent.Load() {
		g.cut.CutSilent(timeout)
	}
	u.scratch.open = false
	return true
}

// fromService reports whether err is a status the service sent rather
// than one gRPC made up for a failed connection or an expired deadline.
func fromService(err error) bool {
	switch status.Code(err) {
	case codes.OK, codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Unknown, codes.Internal:
		return false
	}
	return true
}

func (g *grpcTransport) startUpload(u *upload, timeout time.Duration) (string, error) {
	if u.app != nil {
		// An appendable object has no session: its first stream creates
		// it (see openAppend).
		return "", nil
	}
	req := &wire.StartResumableWriteRequest{WriteObjectSpec: u.spec()}
	var resp wire.StartResumableWriteResponse
	if err := g.invoke(u, wire.MethodStartResumableWrite, req, &resp, timeout); err != nil {
		return "", err
	}
	return resp.GetUploadId(), nil
}

// queryStatus asks on the connection of the session's streams, when it has
// had one: a call that completed there after the old stream was torn down
// proves that connection's writer went past that stream's messages, so
// what gRPC still holds of them it never releases, and they are released
// by force (see outMsg). Every stream of a session takes that connection
// (see openStream), so this covers all of its messages; a call on another
// connection would prove nothing.
func (g *grpcTransport) queryStatus(u *upload, id string, route any, size int64, timeout time.Duration) (int64, *wire.Object, error) {
	if u.app != nil {
		return g.appendStatus(u, size, timeout)
	}
	var st wire.QueryWriteStatusResponse
	req := &wire.QueryWriteStatusRequest{UploadId: id}
	c, streamed := route.(*grpcConn)
	if streamed {
		c.active.Add(1)
	} else {
		c = g.pick(false)
	}
	if err := g.invokeOn(c, u, wire.MethodQueryWriteStatus, req, &st, timeout); err != nil {
		return 0, nil, err
	}
	if streamed {
		u.life.forceRelease()
	}
	if o := st.GetResource(); o != nil {
		return o.GetSize(), o, nil
	}
	return st.GetPersistedSize(), nil, nil
}

// cancelUpload: an unfinished gRPC session that no stream writes to is
// dropped by the service when it expires.
func (g *grpcTransport) cancelUpload(*upload, string, time.Duration) {}

// window: a stream's messages are acknowledged one by one, so the window is
// what may be unacknowledged.
func (g *grpcTransport) window(perSend int64) int64 { return perSend }

type bidiStream = grpc.BidiStreamingClient[wire.BidiWriteObjectRequest, wire.BidiWriteObjectResponse]

// grpcStream is a resumable session's BidiWriteObject stream: chunks go out
// in messages of up to 2 MiB, each flushed with a state lookup, and a
// receiver goroutine reports the persisted sizes to the session (its
// sink). A sent message not acknowledged within the attempt timeout
// cancels the stream.
type grpcStream struct {
	sink   streamSink
	u      *upload
	id     string    // the session's
	via    *grpcConn // the connection the stream took
	conn   *grpcConn // counts the stream until it is torn down
	stream bidiStream
	// ctx is the stream's context, cancelled when the stream fails (which
	// is what broken reports), by the attempt timeout or at teardown; its
	// cause tells an attempt timeout.
	ctx      context.Context
	cancel   context.CancelCauseFunc
	recvDone chan struct{}
	timeout  time.Duration
	local    net.Addr // the TCP connection's local address, which the cut dialer knows it by
	cut      *netcut.Dialer
	acked    atomic.Int64 // persisted, as the service last said
	app      *appendState // an appendable object's, else nil
	finished atomic.Bool  // the service returned the object
	err      error        // why the receiver stopped; read after recvDone

	// The attempt timeout: armed while something sent awaits its
	// acknowledgement. tmu orders the Writer's sends with the receiver's
	// acknowledgements; it is the stream's own.
	tmu     sync.Mutex
	timer   *time.Timer
	armedTo int64 // data sent up to here
	finOut  bool  // the finish went out

	// Owned by the Writer's goroutine.
	fresh   bool        // the next message is the stream's first: it names the upload
	sentTo  int64       // the offset up to which data went out
	finSent bool        // finish_write went out
	want    pushed      // what the last send was asked to send
	batch   []*chunkRef // scratch: the chunks a send goes through
}

// openStream opens the session's stream on the connection its first stream
// took (route; see pick), so that a status query on that connection proves
// the writer went past every message of the session's earlier streams.
func (g *grpcTransport) openStream(u *upload, id string, route any, persisted int64, sink streamSink, timeout time.Duration) (stream, error) {
	if u.app != nil {
		return g.openAppendStream(u, persisted, sink, timeout)
	}
	ctx, cancel := context.WithCancelCause(u.ctx)
	c, ok := route.(*grpcConn)
	if ok {
		c.streams.Add(1)
		c.active.Add(1)
	} else {
		c = g.pick(true)
	}
	st, err := wire.NewBidiWriteObjectStream(u.outgoing(ctx), c.ClientConn, g.callOpts...)
	if err != nil {
		c.doneData()
		cancel(err)
		return nil, err
	}
	gs := &grpcStream{sink: sink, u: u, id: id, via: c, conn: c, stream: st, ctx: ctx, cancel: cancel, fresh: true,
		recvDone: make(chan struct{}), timeout: timeout, cut: g.cut}
	if p, ok := peer.FromContext(st.Context()); ok {
		gs.local = p.LocalAddr
	}
	gs.sentTo, gs.armedTo = persisted, persisted
	gs.acked.Store(persisted)
	gs.timer = time.AfterFunc(gs.timeout, func() { cancel(errChunkTimeout) })
	gs.timer.Stop()
	go gs.receive()
	return gs, nil
}

func (g *grpcStream) route() any { return g.via }

// receive reads the service's answers until the stream ends.
func (g *grpcStream) receive() {
	defer close(g.recvDone)
	// One response message serves the whole stream: what the session keeps
	// of it (the finished object) is a message of its own, which Reset
	// leaves alone.
	resp := new(wire.BidiWriteObjectResponse)
	for {
		resp.Reset()
		err := g.stream.RecvMsg(resp)
		if err == nil {
			var persisted int64
			var o *wire.Object
			switch ws := resp.GetWriteStatus().(type) {
			case *wire.BidiWriteObjectResponse_PersistedSize:
				persisted = ws.PersistedSize
			case *wire.BidiWriteObjectResponse_Resource:
				o, persisted = ws.Resource, ws.Resource.GetSize()
			default:
				continue
			}
			if g.app != nil {
				g.app.answered(resp)
				if !isFinalized(o) {
					// An appendable object's resource before the
					// finish: what it persisted so far.
					o = nil
				}
			}
			g.acked.Store(persisted)
			if o != nil {
				g.finished.Store(true)
			}
			err = g.sink.ack(persisted, o)
			g.rearm(persisted, o != nil)
			if err == nil {
				continue
			}
		} else if err == io.EOF && !g.finished.Load() {
			err = fmt.Errorf("the service ended the stream before the upload finished: %w", io.ErrUnexpectedEOF)
		}
		if g.app != nil {
			g.app.redirected(err)
		}
		g.err = err
		g.cancel(err)
		g.sink.broke(err)
		return
	}
}

// rearm restarts the attempt timeout after an acknowledgement while
// something sent awaits one, and stops it otherwise.
func (g *grpcStream) rearm(persisted int64, finished bool) {
	g.tmu.Lock()
	if !finished && (g.armedTo > persisted || g.finOut) {
		g.timer.Reset(g.timeout)
	} else {
		g.timer.Stop()
	}
	g.tmu.Unlock()
}

// armTimer restarts the attempt timeout before a send of data up to to
// (and of the finish, if fin).
func (g *grpcStream) armTimer(to int64, fin bool) {
	g.tmu.Lock()
	g.armedTo, g.finOut = max(g.armedTo, to), g.finOut || fin
	g.timer.Reset(g.timeout)
	g.tmu.Unlock()
}

func (g *grpcStream) idle() bool { return g.sentTo <= g.acked.Load() }

func (g *grpcStream) behind() bool {
	return g.sentTo < g.want.last || (g.want.final && !g.finSent)
}

func (g *grpcStream) broken() context.Context { return g.ctx }

// send sends the data pushed and not yet sent on the stream, from sentTo,
// in messages of up to 2 MiB made of consecutive chunks (each chunk a part
// of the message, not copied), each with its CRC32C combined from the
// chunks' and a flush and state lookup. Unless all is set it sends only
// whole 2 MiB messages and keeps the rest for later; with all set, a final
// session's finish_write with the object's checksums follows the data, and
// the stream is half-closed.
func (g *grpcStream) send(p pushed, all bool) error {
	g.want = p
	life := &g.u.life
	if g.sentTo < p.last {
		batch := g.sink.unsent(g.sentTo, g.batch[:0])
		g.batch = batch // keep the capacity for the next send
		defer clear(batch)
		for len(batch) > 0 && g.sentTo < p.last && (all || p.last-g.sentTo >= maxMessage) {
			msg, req := newReqMsg[wire.BidiWriteObjectRequest]()
			start, size := g.sentTo, 0
			var crc uint32
			for len(batch) > 0 && msg.parts() < maxParts {
				r := batch[0]
				rel := int(g.sentTo - r.Offset)
				piece := rel / chunker.MaxPiece
				end := min((piece+1)*chunker.MaxPiece, len(r.Data))
				data := r.Data[rel:end]
				if size > 0 && size+len(data) > maxMessage {
					break
				}
				if !g.u.noCRC() {
					pc := r.PieceCRC32C(piece)
					if rel != piece*chunker.MaxPiece {
						// A tail resent after a resume: checksum it afresh
						// (the fault path only).
						pc = crc32c.Checksum(data)
					}
					crc = crc32c.Combine(crc, pc, int64(len(data)))
				}
				life.add(msg, r, data)
				size += len(data)
				g.sentTo += int64(len(data))
				if end == len(r.Data) {
					batch = batch[1:]
				}
			}
			g.startRequest(req, start)
			req.Flush, req.StateLookup = true, true
			msg.CRC32C, msg.HasCRC = crc, !g.u.noCRC()
			g.armTimer(g.sentTo, false)
			err := g.stream.SendMsg(&msg.WriteMsg)
			life.sent(msg)
			if err != nil {
				return err
			}
		}
	}
	if !all || !p.final || g.finSent || g.sentTo < p.last {
		return nil
	}
	req := new(wire.BidiWriteObjectRequest)
	g.startRequest(req, p.last)
	req.FinishWrite, req.ObjectChecksums = true, g.u.checksums()
	g.armTimer(p.last, true)
	g.finSent = true
	if err := g.stream.SendMsg(req); err != nil {
		return err
	}
	return g.stream.CloseSend()
}

// startRequest fills req as a message at offset; a stream's first names
// the upload.
func (g *grpcStream) startRequest(req *wire.BidiWriteObjectRequest, offset int64) {
	req.WriteOffset = offset
	if g.fresh && g.app == nil {
		req.FirstMessage = &wire.BidiWriteObjectRequest_UploadId{UploadId: g.id}
		g.fresh = false
	}
}

// teardown cancels the stream and waits for its receiver. It returns the
// failure as the stream saw it: its own attempt timeout (which gRPC reports
// as a plain Canceled), or the stream's status when a send only saw io.EOF.
func (g *grpcStream) teardown(cause error) error {
	if errors.Is(context.Cause(g.ctx), errChunkTimeout) {
		// No acknowledgement within the attempt timeout: the connection
		// is presumed dead, and reset (see grpcTransport.abandoned).
		cause = errChunkTimeout
		g.cut.Cut(g.local)
	} else if cause == io.EOF {
		// SendMsg reports a broken stream as io.EOF; the reason is the
		// stream's status, which the receiver gets.
		<-g.recvDone
		if g.err != nil {
			cause = g.err
		}
	}
	g.timer.Stop()
	g.cancel(cause)
	<-g.recvDone
	if g.u.ctx.Err() != nil && g.conn != nil {
		// Cancelled with the upload: its reset may wait behind a stalled
		// path, and the stream stays open until fenced.
		g.u.via = g.conn
		g.u.scratch.open = true
	}
	if g.conn != nil {
		g.conn.doneData()
		g.conn = nil
	}
	return cause
}

// done waits for the stream's status after the finished object.
func (g *grpcStream) done(ctx context.Context) {
	select {
	case <-g.recvDone:
	case <-ctx.Done():
	}
}
