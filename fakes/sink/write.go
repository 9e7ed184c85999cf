package sink

import (
	"context"
	"errors"
	"hash/crc32"
	"io"

	"google.golang.org/grpc"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/writes"
	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/internal/wire"
)

// writeStream is the state of one WriteObject or BidiWriteObject stream:
// the write engine's Stream (writes.Engine drives it), which counts the
// bytes of its upload and drops them.
type writeStream struct {
	k   *Server
	ctx context.Context
	up  *upload
	eng writes.Engine
	msg *sinkMsg // the message being handled

	// Appendable objects (see append.go).
	epoch        uint64 // the writer epoch the stream writes as
	sendResource bool   // the first response carries the object
}

// write serves a WriteObject (bidi false) or BidiWriteObject stream.
func (k *Server) write(stream grpc.ServerStream, bidi bool) error {
	m := &sinkMsg{bidi: bidi, copyDecode: k.cfg.copyDecode}
	st := &writeStream{k: k, ctx: stream.Context(), msg: m}
	st.eng = writes.Engine{Stream: st, Bidi: bidi}
	defer st.abandon()
	defer m.release()
	for first := true; ; first = false {
		err := stream.RecvMsg(m)
		if errors.Is(err, io.EOF) {
			obj, size, err := st.eng.End()
			if err != nil {
				return err
			}
			if obj == nil && st.up.appendable {
				return stream.SendMsg(st.appendResponse(false))
			}
			return stream.SendMsg(sinkResponse(bidi, obj, size))
		}
		if err != nil {
			return err
		}
		k.messages.Add(1)
		m.f = m.fields()
		obj, size, err := st.eng.Handle(&m.f, int64(m.n), m.hasData)
		m.release()
		if err != nil {
			return err
		}
		if obj != nil {
			return stream.SendMsg(sinkResponse(bidi, obj, 0))
		}
		if st.up.appendable && (first || m.f.Lookup) {
			if err := stream.SendMsg(st.appendResponse(first)); err != nil {
				return err
			}
			continue
		}
		if bidi && m.f.Lookup {
			if err := stream.SendMsg(sinkResponse(true, nil, size)); err != nil {
				return err
			}
		}
	}
}

func sinkResponse(bidi bool, obj *wire.Object, size int64) any {
	if bidi {
		return api.BidiResponse(obj, size)
	}
	return api.WriteResponse(obj, size)
}

// NewUpload implements writes.Stream.
func (st *writeStream) NewUpload(m *api.WriteMsg) (writes.Upload, error) {
	up, err := st.k.newUpload(st.ctx, m.Spec, m.Common)
	return st.opened(up, err)
}

// Resume implements writes.Stream.
func (st *writeStream) Resume(id string) (writes.Upload, error) {
	up, err := st.k.session(id)
	return st.opened(up, err)
}

// OpenAppendable implements writes.Stream.
func (st *writeStream) OpenAppendable(m *api.WriteMsg) (writes.Upload, error) {
	if m.Sums != nil && !m.Finish {
		return nil, writes.ErrAppendSums
	}
	up, err := st.k.newUpload(st.ctx, m.Spec, m.Common)
	if err == nil {
		err = up.cond.CheckVersion(st.k.current(up.bucket, up.res.GetName()))
	}
	if err != nil {
		return nil, err
	}
	st.k.openAppendable(st, up)
	return up, nil
}

// OpenAppend implements writes.Stream.
func (st *writeStream) OpenAppend(m *api.WriteMsg) (writes.Upload, error) {
	err := st.k.openAppend(st, m) // sets st.up
	return st.opened(st.up, err)
}

// opened makes up the stream's upload, if err is nil.
func (st *writeStream) opened(up *upload, err error) (writes.Upload, error) {
	if err != nil {
		return nil, err
	}
	st.up = up
	return up, nil
}

// Epoch implements writes.Stream.
func (st *writeStream) Epoch() uint64 { return st.epoch }

// Check implements writes.Stream: an MD5 declared before any content
// starts the hashing (an appendable object has no MD5 to hash).
func (st *writeStream) Check(m *api.WriteMsg) error {
	if m.Sums != nil && !st.up.appendable {
		return st.up.declare(m.Sums)
	}
	return nil
}

// Accept implements writes.Stream: it checks the content of the message
// being handled, adds it to the upload's size and checksums, and drops
// it.
func (st *writeStream) Accept(f *api.WriteMsg) error {
	up, m, offset := st.up, st.msg, f.Offset
	n := int64(m.n)
	if err := up.CheckMessage(offset, n, up.appendable); err != nil {
		return err
	}
	var crc uint32
	m.content(func(b []byte) { crc = crc32.Update(crc, crc32c.Table, b) })
	if m.hasCRC {
		if err := writes.CheckCRC(offset, n, m.sentCRC, crc); err != nil {
			return err
		}
	}
	if skip := up.Size - offset; skip > 0 {
		// An appendable object's writer resent bytes persisted: the
		// overlap is dropped.
		skip = min(skip, n)
		crc, n = 0, n-skip
		m.content(func(b []byte) {
			if d := min(skip, int64(len(b))); d > 0 {
				b, skip = b[d:], skip-d
			}
			crc = crc32.Update(crc, crc32c.Table, b)
		})
		if n == 0 {
			return nil
		}
	}
	if up.MD5 != nil {
		// A second pass, and only once the CRC32C held: the digest must
		// not take in bytes that are refused.
		m.content(func(b []byte) { up.MD5.Write(b) })
	}
	up.Add(n, crc)
	st.k.received.Add(n)
	return nil
}

// Checked implements writes.Stream.
func (st *writeStream) Checked() error { return nil }

// Persist implements writes.Stream: the bytes received are persisted.
func (st *writeStream) Persist() error {
	st.up.app.Persist(&st.up.State)
	return nil
}

// Finalize implements writes.Stream.
func (st *writeStream) Finalize() (*wire.Object, error) { return st.k.finalize(st.up) }

// FinalizeAppendable implements writes.Stream.
func (st *writeStream) FinalizeAppendable() (*wire.Object, error) {
	return st.k.finalizeAppendable(st.up)
}
