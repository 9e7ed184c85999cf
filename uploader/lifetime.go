package uploader

import (
	"sync"
	"sync/atomic"
	"time"

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
	msgs     []*outMsg      // messages with data not known to be released
	msgsBuf  [1]*outMsg     // msgs' first backing array: a one-shot upload's message
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
		if r.Buf != nil {
			r.l.alloc.Put(r.Buf)
		}
		r.l.bufs.Done()
	case n < 0:
		panic("uploader: chunk released more often than referenced")
	}
}

// newRef takes ownership of a chunk: one reference, the caller's.
func (l *lifetime) newRef(c chunker.Chunk) *chunkRef {
	r := &l.first
	if r.l != nil {
		r = new(chunkRef)
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

// outMsg is one write message whose payload is (part of) a chunk's memory. It
// is the mem.BufferPool that gRPC calls once it no longer reads the payload,
// which drops the message's reference on the chunk, once.
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
	ref  *chunkRef
	done atomic.Bool
}

// orphanGrace bounds the wait for gRPC to release the messages of a stream
// that was torn down, when no later RPC proves it has let go of them.
const orphanGrace = time.Second

// newMsg returns a message over data, part of r's chunk, holding a reference
// on r until gRPC releases it. An empty data makes a message without payload
// and without a reference.
func (l *lifetime) newMsg(r *chunkRef, data []byte) *outMsg {
	m := &l.firstMsg
	if m.ref != nil {
		m = new(outMsg)
	}
	m.ref = r
	if len(data) == 0 {
		return m
	}
	if len(data) == len(r.Data) {
		m.Data = &r.Data
	} else {
		p := data[:len(data):len(data)]
		m.Data = &p
	}
	m.Release = m
	r.refs.Add(1)
	l.track(m)
	return m
}

// track remembers a message with data until gRPC releases it. Released
// messages are dropped as the list grows, which keeps it about as long as the
// messages in flight.
func (l *lifetime) track(m *outMsg) {
	if len(l.msgs) >= 32 && len(l.msgs) == cap(l.msgs) {
		kept := l.msgs[:0]
		for _, x := range l.msgs {
			if !x.done.Load() {
				kept = append(kept, x)
			}
		}
		clear(l.msgs[len(kept):])
		l.msgs = kept
	}
	if l.msgs == nil {
		l.msgs = l.msgsBuf[:0]
	}
	l.msgs = append(l.msgs, m)
}

// sent reports the outcome of SendMsg or Invoke for m: a message the codec
// never took is released at once. One that gRPC took stays tracked until
// gRPC releases it, or forceRelease or wait does.
func (l *lifetime) sent(m *outMsg) {
	if m.Data != nil && !m.Marshaled() {
		m.release()
	}
}

// forceRelease drops the references of every message gRPC still holds. Call
// it only when no call of the upload is in flight and a later RPC on the
// connection has completed since the last one that carried data: gRPC's
// writer then went past every earlier message, so it has either released it
// or never will (see outMsg).
func (l *lifetime) forceRelease() (forced int) {
	for _, m := range l.msgs {
		if m.release() {
			forced++
		}
	}
	clear(l.msgs)
	l.msgs = l.msgs[:0]
	return forced
}

// wait blocks until every chunk's buffer is back. The upload is over and its
// streams are torn down: whatever gRPC has not released within orphanGrace,
// it never will, so it is released by force then.
func (l *lifetime) wait() {
	var held []*outMsg
	for _, m := range l.msgs {
		if !m.done.Load() {
			held = append(held, m)
		}
	}
	l.msgs = nil
	if len(held) > 0 {
		ev := l.ev
		t := time.AfterFunc(orphanGrace, func() {
			forced := 0
			for _, m := range held {
				if m.release() {
					forced++
				}
			}
			ev.forced(forced)
		})
		defer t.Stop()
	}
	l.bufs.Wait()
}

// release drops the message's reference; only the first call counts, and
// reports true.
func (m *outMsg) release() bool {
	if m.done.CompareAndSwap(false, true) {
		m.ref.unref()
		return true
	}
	return false
}

// Get is never called: the payload buffers are ours.
func (m *outMsg) Get(int) *[]byte { return nil }

// Put is called by gRPC once it no longer reads the payload.
func (m *outMsg) Put(*[]byte) { m.release() }
