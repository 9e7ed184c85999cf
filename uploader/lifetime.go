package uploader

import (
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/pool"
)

// lifetime tracks the chunk buffers of one upload until they may go back to
// their allocator. A chunk is referenced by its owner (the Writer, then the
// session until the service acknowledges it) and by every message gRPC may
// still read; its buffer goes back when the last reference drops. wait
// blocks until every buffer is back.
//
// It belongs to the Writer's goroutine, except outMsg.Put and chunkRef.unref,
// which gRPC and the session's receiver call from theirs.
type lifetime struct {
	alloc    pool.Allocator
	bufs     sync.WaitGroup // chunks whose buffer is not back yet
	first    chunkRef       // the first chunk, kept here to spare an allocation
	firstMsg outMsg         // the first message, likewise
	holds    []*hold        // parts not known to be released
	holdsBuf [1]*hold       // holds' first backing array: a one-shot upload's part
	ev       *uploadEvents  // told of forced releases
}

// chunkRef is a chunk in flight. Its buffer goes back to the allocator when the
// last reference drops.
type chunkRef struct {
	l    *lifetime
	refs atomic.Int32
	chunker.Chunk
}

func (r *chunkRef) end() int64 { return r.Offset + int64(len(r.Data)) }

func (r *chunkRef) unref() {
	switch n := r.refs.Add(-1); {
	case n == 0:
		l := r.l
		if r.Buf != nil {
			l.alloc.Put(r.Buf)
		}
		if r != &l.first {
			// Nothing refers to r any more: pending lists drop a chunk
			// before its last reference, and a released hold never reads
			// its chunk again.
			*r = chunkRef{}
			refPool.Put(r)
		}
		l.bufs.Done()
	case n < 0:
		panic("uploader: chunk released more often than referenced")
	}
}

// refPool recycles the chunk references of resumable uploads: one per chunk
// would be a quarter of a large upload's allocations.
var refPool = sync.Pool{New: func() any { return new(chunkRef) }}

// newRef takes ownership of a chunk: one reference, the caller's.
func (l *lifetime) newRef(c chunker.Chunk) *chunkRef {
	r := &l.first
	if r.l != nil {
		r = refPool.Get().(*chunkRef)
	}
	r.l, r.Chunk = l, c
	r.refs.Store(1)
	l.bufs.Add(1)
	return r
}

// putBuffer gives back a buffer that was never part of a chunk.
func (l *lifetime) putBuffer(b *[]byte) {
	if b != nil {
		l.alloc.Put(b)
	}
}

// outMsg is one write message whose payload is one or more parts of chunks:
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
type outMsg struct {
	wire.WriteMsg
	h0   hold       // the first part's hold
	more *moreParts // nil until the message has a second part or a partial first one
}

// maxParts is the most parts a message takes: 2 MiB of 256 KiB chunks.
const maxParts = maxMessage / (256 << 10)

// moreParts is the storage of a message's parts beyond a whole first chunk.
type moreParts struct {
	datas [maxParts][]byte // the parts' bytes; Data and More point here
	holds [maxParts - 1]hold
	parts [maxParts - 1]wire.Part
}

// hold is one part's reference on its chunk until gRPC releases the part.
type hold struct {
	ref  *chunkRef
	done atomic.Bool
}

// Get is never called: the payload buffers are ours.
func (h *hold) Get(int) *[]byte { return nil }

// Put is called by gRPC once it no longer reads the part.
func (h *hold) Put(*[]byte) { h.release() }

// release drops the part's reference; only the first call counts, and
// reports true.
func (h *hold) release() bool {
	if h.done.CompareAndSwap(false, true) {
		h.ref.unref()
		return true
	}
	return false
}

// orphanGrace bounds the wait for gRPC to release the messages of a stream
// that was torn down, when no later RPC proves it has let go of them.
const orphanGrace = time.Second

// newMsg returns an empty message; add gives it its parts.
func (l *lifetime) newMsg() *outMsg {
	if l.firstMsg.Req == nil {
		// Unused: every message gets its request right after newMsg.
		return &l.firstMsg
	}
	return new(outMsg)
}

// reqMsg is a message of a stream (R: a BidiWriteObjectRequest or a
// WriteObjectRequest) with its request and its parts' storage, allocated
// together: one allocation per 2 MiB message instead of three.
type reqMsg[R any] struct {
	outMsg
	req  R
	more moreParts
}

// newReqMsg returns an empty message of a stream and its request, which
// the caller fills.
func newReqMsg[R any, P interface {
	*R
	proto.Message
}]() (*outMsg, P) {
	m := new(reqMsg[R])
	m.outMsg.more = &m.more
	m.outMsg.Req = P(&m.req)
	return &m.outMsg, &m.req
}

// parts returns how many parts m has.
func (m *outMsg) parts() int {
	if m.Data == nil {
		return 0
	}
	return 1 + len(m.More)
}

// add appends data, a non-empty part of r's chunk, to m's payload, with a
// reference on r until gRPC releases it.
func (l *lifetime) add(m *outMsg, r *chunkRef, data []byte) {
	i := m.parts()
	if i >= maxParts {
		panic("uploader: too many parts in one message")
	}
	var h *hold
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

// hold returns a reference on r for a request body that reads r's memory,
// tracked until released.
func (l *lifetime) hold(r *chunkRef) *hold {
	h := &hold{ref: r}
	r.refs.Add(1)
	l.track(h)
	return h
}

// track remembers a part until gRPC releases it. Released parts are dropped
// as the list grows, which keeps it about as long as the parts in flight.
func (l *lifetime) track(h *hold) {
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

// sent reports the outcome of SendMsg or Invoke for m: a message the codec
// never took is released at once. One that gRPC took stays tracked until
// gRPC releases it, or forceRelease or wait does.
func (l *lifetime) sent(m *outMsg) {
	if m.Data == nil || m.Marshaled() {
		return
	}
	m.h0.release()
	for i := range m.More {
		m.more.holds[i].release()
	}
}

// forceRelease drops the references of every message gRPC still holds. Call
// it only when no call of the upload is in flight and a later RPC on the
// connection has completed since the last one that carried data: gRPC's
// writer then went past every earlier message, so it has either released it
// or never will (see outMsg).
func (l *lifetime) forceRelease() {
	forced := 0
	for _, h := range l.holds {
		if h.release() {
			forced++
		}
	}
	clear(l.holds)
	l.holds = l.holds[:0]
	l.ev.Forced(forced)
}

// holding reports whether gRPC may still hold one of the upload's
// messages.
func (l *lifetime) holding() bool {
	for _, h := range l.holds {
		if !h.done.Load() {
			return true
		}
	}
	return false
}

// wait blocks until every chunk's buffer is back. The upload is over and its
// streams are torn down: whatever gRPC has not released within orphanGrace,
// it never will, so it is released by force then.
func (l *lifetime) wait() {
	var held []*hold
	for _, h := range l.holds {
		if !h.done.Load() {
			held = append(held, h)
		}
	}
	l.holds = nil
	if len(held) > 0 {
		ev := l.ev
		t := time.AfterFunc(orphanGrace, func() {
			forced := 0
			for _, h := range held {
				if h.release() {
					forced++
				}
			}
			ev.Forced(forced)
		})
		defer t.Stop()
	}
	l.bufs.Wait()
}
