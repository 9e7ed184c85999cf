package grpcx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/objup/objup/uploader/internal/xfer"

	"google.golang.org/grpc"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/internal/wire"
)

type bidiStream = grpc.BidiStreamingClient[wire.BidiWriteObjectRequest, wire.BidiWriteObjectResponse]

// grpcStream is a resumable session's BidiWriteObject stream: chunks go out
// in messages of up to 2 MiB, each flushed with a state lookup, and a
// receiver goroutine reports the persisted sizes to the session (its
// sink). A sent message not acknowledged within the attempt timeout
// cancels the stream.
type grpcStream struct {
	sink   xfer.StreamSink
	u      *xfer.Request
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
	// appendable: the stream is an appendable object's (see OpenAppend).
	appendable bool

	// mu guards what the receiver shares with the Writer's goroutine:
	// the persisted size the service last reported, and the attempt
	// timeout, armed while something sent awaits its acknowledgement (mu
	// orders the Writer's sends with the receiver's acknowledgements).
	mu      sync.Mutex
	acked   int64 // persisted, as the service last said
	timer   *time.Timer
	armedTo int64 // data sent up to here
	finOut  bool  // the finish went out

	// Owned by the receiver's goroutine; err is read by others once
	// recvDone is closed.
	finished bool  // the service returned the object
	err      error // why the receiver stopped

	// Owned by the Writer's goroutine.
	fresh   bool        // the next message is the stream's first: it names the upload
	sentTo  int64       // the offset up to which data went out
	finSent bool        // finish_write went out
	want    xfer.Pushed // what the last send was asked to send
}

// From is where the stream's next message starts: what it sent.
func (g *grpcStream) From() int64 { return g.sentTo }

// OpenStream opens the session's stream on the connection its first stream
// took (route; see pick), so that a status query on that connection proves
// the writer went past every message of the session's earlier streams.
func (g *grpcTransport) OpenStream(u *xfer.Request, id string, route xfer.Route, persisted int64, sink xfer.StreamSink, timeout time.Duration) (xfer.Stream, error) {
	ctx, cancel := context.WithCancelCause(u.Ctx)
	c := g.routed(route)
	if c != nil {
		c.useData()
	} else {
		c = g.pick(true)
	}
	st, err := wire.NewBidiWriteObjectStream(u.Outgoing(ctx), c.ClientConn, g.callOpts...)
	if err != nil {
		c.doneData()
		cancel(err)
		return nil, err
	}
	gs := &grpcStream{sink: sink, u: u, id: id, via: c, conn: c, stream: st, ctx: ctx, cancel: cancel, fresh: true,
		recvDone: make(chan struct{}), timeout: timeout}
	gs.sentTo, gs.armedTo = persisted, persisted
	gs.acked = persisted // before the receiver starts
	gs.timer = time.AfterFunc(gs.timeout, func() { cancel(xfer.ErrChunkTimeout) })
	gs.timer.Stop()
	go gs.receive()
	return gs, nil
}

func (g *grpcStream) Route() xfer.Route { return g.via.route }

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
			var handle []byte
			if g.appendable {
				if h := resp.GetWriteHandle(); h != nil {
					handle = h.GetHandle()
				}
				if !isFinalized(o) {
					// An appendable object's resource before the
					// finish: what it persisted so far.
					o = nil
				}
			}
			g.mu.Lock()
			g.acked = persisted
			g.mu.Unlock()
			g.finished = g.finished || o != nil
			err = g.sink.Ack(persisted, o, handle)
			g.rearm(persisted, o != nil)
			if err == nil {
				continue
			}
		} else if err == io.EOF && !g.finished {
			err = fmt.Errorf("the service ended the stream before the upload finished: %w", io.ErrUnexpectedEOF)
		}
		g.err = err
		g.cancel(err)
		g.sink.Broke(err)
		return
	}
}

// rearm restarts the attempt timeout after an acknowledgement while
// something sent awaits one, and stops it otherwise.
func (g *grpcStream) rearm(persisted int64, finished bool) {
	g.mu.Lock()
	if !finished && (g.armedTo > persisted || g.finOut) {
		g.timer.Reset(g.timeout)
	} else {
		g.timer.Stop()
	}
	g.mu.Unlock()
}

// armTimer restarts the attempt timeout before a send of data up to to
// (and of the finish, if fin).
func (g *grpcStream) armTimer(to int64, fin bool) {
	g.mu.Lock()
	g.armedTo, g.finOut = max(g.armedTo, to), g.finOut || fin
	g.timer.Reset(g.timeout)
	g.mu.Unlock()
}

func (g *grpcStream) Idle() bool { return g.sentTo <= g.ackedNow() }

// ackedNow returns the persisted size the service last reported.
func (g *grpcStream) ackedNow() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.acked
}

func (g *grpcStream) Behind() bool {
	return g.sentTo < g.want.Last || (g.want.Final && !g.finSent)
}

func (g *grpcStream) Broken() context.Context { return g.ctx }

// Send sends the data pushed and not yet sent on the stream, from sentTo,
// in messages of up to 2 MiB made of consecutive chunks (each chunk a part
// of the message, not copied), each with its CRC32C combined from the
// chunks' and a flush and state lookup. Unless all is set it sends only
// whole 2 MiB messages and keeps the rest for later; with all set, a final
// session's finish_write with the object's checksums follows the data, and
// the stream is half-closed.
func (g *grpcStream) Send(p xfer.Pushed, rs []*xfer.ChunkRef, all bool) error {
	g.want = p
	life := &g.u.Life
	if g.sentTo < p.Last {
		batch := rs
		for len(batch) > 0 && batch[0].End() <= g.sentTo {
			batch = batch[1:]
		}
		for len(batch) > 0 && g.sentTo < p.Last && (all || p.Last-g.sentTo >= xfer.MaxMessage) {
			msg, req := xfer.NewReqMsg[wire.BidiWriteObjectRequest]()
			start, size := g.sentTo, 0
			var crc uint32
			for len(batch) > 0 && msg.Parts() < xfer.MaxParts {
				r := batch[0]
				rel := int(g.sentTo - r.Offset)
				piece := rel / chunker.MaxPiece
				end := min((piece+1)*chunker.MaxPiece, len(r.Data))
				data := r.Data[rel:end]
				if size > 0 && size+len(data) > xfer.MaxMessage {
					break
				}
				if !g.u.NoCRC() {
					pc := r.PieceCRC32C(piece)
					if rel != piece*chunker.MaxPiece {
						// A tail resent after a resume: checksum it afresh
						// (the fault path only).
						pc = crc32c.Checksum(data)
					}
					crc = crc32c.Combine(crc, pc, int64(len(data)))
				}
				life.Add(msg, r, data)
				size += len(data)
				g.sentTo += int64(len(data))
				if end == len(r.Data) {
					batch = batch[1:]
				}
			}
			g.startRequest(req, start)
			req.Flush, req.StateLookup = true, true
			msg.CRC32C, msg.HasCRC = crc, !g.u.NoCRC()
			g.armTimer(g.sentTo, false)
			err := g.stream.SendMsg(&msg.WriteMsg)
			life.Sent(msg)
			if err != nil {
				return err
			}
		}
	}
	if !all || !p.Final || g.finSent || g.sentTo < p.Last {
		return nil
	}
	req := new(wire.BidiWriteObjectRequest)
	g.startRequest(req, p.Last)
	req.FinishWrite, req.ObjectChecksums = true, g.u.Checksums()
	g.armTimer(p.Last, true)
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
	if g.fresh && !g.appendable {
		req.FirstMessage = &wire.BidiWriteObjectRequest_UploadId{UploadId: g.id}
		g.fresh = false
	}
}

// Teardown cancels the stream and waits for its receiver. It returns the
// failure as the stream saw it: its own attempt timeout (which gRPC reports
// as a plain Canceled), or the stream's status when a send only saw io.EOF.
func (g *grpcStream) Teardown(cause error) error {
	if errors.Is(context.Cause(g.ctx), xfer.ErrChunkTimeout) {
		// No acknowledgement within the attempt timeout: the stream is
		// cancelled (reset), not its connection, which other uploads'
		// streams share.
		cause = xfer.ErrChunkTimeout
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
	if g.conn != nil {
		g.conn.doneData()
		g.conn = nil
	}
	return cause
}

// Done waits for the stream's status after the finished object.
func (g *grpcStream) Done(ctx context.Context) {
	select {
	case <-g.recvDone:
	case <-ctx.Done():
	}
}
