package xfer

import (
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/pool"
)

// Lifetime tracks the chunk buffers of one upload until they may go back to
// their allocator. A chunk is referenced by its owner (the Writer, then the
// session until the service acknowledges it) and by every message gRPC may
// still read; its buffer goes back when the last reference drops. wait
// blocks until every buffer is back.
//
// It belongs to the Writer's goroutine, except the transports' Put of a message's buffer and [ChunkRef.Unref],
// which gRPC and the session's receiver call from theirs.
type Lifetime struct {
	Alloc    pool.Allocator
	bufs     sync.WaitGroup // chunks whose buffer is not back yet
	first    ChunkRef       // the first chunk, kept here to spare an allocation
	firstMsg OutMsg         // the first message, likewise
	holds    []*Hold        // parts not known to be released
	holdsBuf [1]*Hold       // holds' first backing array: a one-shot upload's part
	Ev       Events         // told of forced releases; nil: nobody
}

// Events is what the seam reports of an upload: buffers released by
// force, redirects of an appendable object's stream.
type Events interface {
	Forced(n int)
	Redirected(token string)
}

// ChunkRef is a chunk in flight. Its buffer goes back to the allocator when the
// last reference drops.
type ChunkRef struct {
	l    *Lifetime
	refs atomic.Int32
	chunker.Chunk
}

func (r *ChunkRef) End() int64 { return r.Offset + int64(len(r.Data)) }

func (r *ChunkRef) Unref() {
	switch n := r.refs.Add(-1); {
	case n == 0:
		l := r.l
		if r.Buf != nil {
			l.Alloc.Put(r.Buf)
		}
		if r != &l.first {
			// Nothing refers to r any more: pending lists drop a chunk
			// before its last reference, and a released hold never reads
			// its chunk again.
			*r = ChunkRef{}
			refPool.Put(r)
		}
		l.bufs.Done()
	case n < 0:
		panic("uploader: chunk released more often than referenced")
	}
}

// refPool recycles the chunk references of resumable uploads: one per chunk
// would be a quarter of a large upload's allocations.
var refPool = sync.Pool{New: func() any { return new(ChunkRef) }}

// NewRef takes ownership of a chunk: one reference, the caller's.
func (l *Lifetime) NewRef(c chunker.Chunk) *ChunkRef {
	r := &l.first
	if r.l != nil {
		r = refPool.Get().(*ChunkRef)
	}
	r.l, r.Chunk = l, c
	r.refs.Store(1)
	l.bufs.Add(1)
	return r
}

// PutBuffer gives back a buffer that was never part of a chunk.
func (l *Lifetime) PutBuffer(b *[]byte) {
	if b != nil {
		l.Alloc.Put(b)
	}
}

// OutMsg is one write message whose payload is one or more parts of chunks:
// up to maxParts consecutive pieces, at most 2 MiB together. Each part has
// its hold: the mem.BufferPool that gRPC calls once it no longer reads that
// part, which drops the part's reference on its chunk, once.
//
// grpc-go v1.85.0 never frees a data frame that reaches its writer goroutine
// (loopy) after the stream was cleaned up: preprocessData drops such a frame
// without freeing its buffers. That happens when SendMsg passed the stream's
// state check and waited for write quota while the server's status cleaned
// the stream up. A message sent while its stream was being torn down may
// therefore never be released. Such a message is released by force once gRPC
// can no longer read it: after a later RPC on the connection completed (loopy
// handles its queue in order, so it went past the message), or orphanGrace
// after the upload ended. TestGRPCDropsTornDownFrames pins that grpc-go
// behaviour: if an upgrade fixes it, the test says so and the forced release
// can go.
type OutMsg struct {
	wire.WriteMsg
	h0   Hold       // the first part's hold
	more *moreParts // nil until the message has a second part or a partial first one
}

// MaxParts is the most parts a message takes: 2 MiB of 256 KiB chunks.
const MaxParts = MaxMessage / (256 << 10)

// moreParts is the storage of a message's parts beyond a whole first chunk.
type moreParts struct {
	datas [MaxParts][]byte // the parts' bytes; Data and More point here
	holds [MaxParts - 1]Hold
	parts [MaxParts - 1]wire.Part
}

// Hold is one part's reference on its chunk until gRPC releases the part.
type Hold struct {
	ref  *ChunkRef
	done atomic.Bool
}

// Get is never called: the payload buffers are ours.
func (h *Hold) Get(int) *[]byte { return nil }

// Put is called by gRPC once it no longer reads the part.
func (h *Hold) Put(*[]byte) { h.Release() }

// Release drops the part's reference; only the first call counts, and
// reports true.
func (h *Hold) Release() bool {
	if h.done.CompareAndSwap(false, true) {
		h.ref.Unref()
		return true
	}
	return false
}

// orphanGrace bounds the wait for gRPC to release the messages of a stream
// that was torn down, when no later RPC proves it has let go of them.
const orphanGrace = time.Second

// NewMsg returns an empty message; add gives it its parts.
func (l *Lifetime) NewMsg() *OutMsg {
	if l.firstMsg.Req == nil {
		// Unused: every message gets its request right after newMsg.
		return &l.firstMsg
	}
	return new(OutMsg)
}

// reqMsg is a message of a stream (R: a BidiWriteObjectRequest or a
// WriteObjectRequest) with its request and its parts' storage, allocated
// together: one allocation per 2 MiB message instead of three.
type reqMsg[R any] struct {
	OutMsg
	req  R
	more moreParts
}

// NewReqMsg returns an empty message of a stream and its request, which
// the caller fills.
func NewReqMsg[R any, P interface {
	*R
	proto.Message
}]() (*OutMsg, P) {
	m := new(reqMsg[R])
	m.OutMsg.more = &m.more
	m.OutMsg.Req = P(&m.req)
	return &m.OutMsg, &m.req
}

// Parts returns how many Parts m has.
func (m *OutMsg) Parts() int {
	if m.Data == nil {
		return 0
	}
	return 1 + len(m.More)
}

// Add appends data, a non-empty part of r's chunk, to m's payload, with a
// reference on r until gRPC releases it.
func (l *Lifetime) Add(m *OutMsg, r *ChunkRef, data []byte) {
	i := m.Parts()
	if i >= MaxParts {
		panic("uploader: too many parts in one message")
	}
	var h *Hold
	switch {
	case i == 0 && len(data) == len(r.Data):
		m.Data, m.Release, h = &r.Data, &m.h0, &m.h0
	default:
		if m.more == nil {
			m.more = new(moreParts)
		}
		d := &m.more.datas[i]
		*d = data[:len(data):len(data)]
		if i == 0 {
			m.Data, m.Release, h = d, &m.h0, &m.h0
		} else {
			h = &m.more.holds[i-1]
			m.more.parts[i-1] = wire.Part{Data: d, Release: h}
			m.More = m.more.parts[:i]
		}
	}
	h.ref = r
	r.refs.Add(1)
	l.track(h)
}

// HoldRef returns a reference on r for a request body that reads r's memory,
// tracked until released.
func (l *Lifetime) HoldRef(r *ChunkRef) *Hold {
	h := &Hold{ref: r}
	r.refs.Add(1)
	l.track(h)
	return h
}

// track remembers a part until gRPC releases it. Released parts are dropped
// as the list grows, which keeps it about as long as the parts in flight.
func (l *Lifetime) track(h *Hold) {
	if len(l.holds) >= 32 && len(l.holds) == cap(l.holds) {
		kept := l.holds[:0]
		for _, x := range l.holds {
			if !x.done.Load() {
				kept = append(kept, x)
			}
		}
		clear(l.holds[len(kept):])
		l.holds = kept
	}
	if l.holds == nil {
		l.holds = l.holdsBuf[:0]
	}
	l.holds = append(l.holds, h)
}

// Sent reports the outcome of SendMsg or Invoke for m: a message the codec
// never took is released at once. One that gRPC took stays tracked until
// gRPC releases it, or forceRelease or wait does.
func (l *Lifetime) Sent(m *OutMsg) {
	if m.Data == nil || m.Marshaled() {
		return
	}
	m.h0.Release()
	for i := range m.More {
		m.more.holds[i].Release()
	}
}

// ForceRelease drops the references of every message gRPC still holds. Call
// it only when no call of the upload is in flight and a later RPC on the
// connection has completed since the last one that carried data: gRPC's
// writer then went past every earlier message, so it has either released it
// or never will (see outMsg).
func (l *Lifetime) ForceRelease() {
	forced := 0
	for _, h := range l.holds {
		if h.Release() {
			forced++
		}
	}
	clear(l.holds)
	l.holds = l.holds[:0]
	if l.Ev != nil {
		l.Ev.Forced(forced)
	}
}

// Adopt takes over the parts that o's messages still hold, once o's
// upload is over: they are released with l's (see Wait).
func (l *Lifetime) Adopt(o *Lifetime) {
	for _, h := range o.holds {
		if !h.done.Load() {
			l.holds = append(l.holds, h)
		}
	}
	o.holds = nil
}

// Holding reports whether gRPC may still hold one of the upload's
// messages.
func (l *Lifetime) Holding() bool {
	for _, h := range l.holds {
		if !h.done.Load() {
			return true
		}
	}
	return false
}

// Wait blocks until every chunk's buffer is back. The upload is over and its
// streams are torn down: whatever gRPC has not released within orphanGrace,
// it never will, so it is released by force then.
func (l *Lifetime) Wait() {
	var held []*Hold
	for _, h := range l.holds {
		if !h.done.Load() {
			held = append(held, h)
		}
	}
	l.holds = nil
	if len(held) > 0 {
		ev := l.Ev
		t := time.AfterFunc(orphanGrace, func() {
			forced := 0
			for _, h := range held {
				if h.Release() {
					forced++
				}
			}
			if ev != nil {
				ev.Forced(forced)
			}
		})
		defer t.Stop()
	}
	l.bufs.Wait()
}
