package uploader

import (
	"context"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/internal/wire"
)

// idempotent reports whether a one-shot upload may be repeated as a whole:
// only a precondition makes a second write of the same object harmless.
func (w *Writer) idempotent() bool {
	s := &w.scratch.spec
	return s.IfGenerationMatch != nil || s.IfGenerationNotMatch != nil ||
		s.IfMetagenerationMatch != nil || s.IfMetagenerationNotMatch != nil
}

// oneShot sends the whole object, r, in one request of the client's
// transport and checks what the service stored. It drops the Writer's
// reference on r.
func (w *Writer) oneShot(r *chunkRef) error {
	defer r.unref()
	o, err := w.c.tr.oneShot(w, r)
	if err != nil {
		return err
	}
	return w.finished(o, int64(len(r.Data)))
}

// grpcOneShot sends r as one WriteObject call, retried.
//
// An object of at most 2 MiB goes out as a unary call (one request message,
// one response): on the wire it is a client stream of one message, and gRPC
// starts no goroutine for it. A larger one (a chunk size over 2 MiB) is
// several messages of at most 2 MiB on one WriteObject client stream, each
// with its own CRC32C, the last with finish_write; gRPC starts one goroutine
// for such a stream.
func (w *Writer) grpcOneShot(r *chunkRef) (*wire.Object, error) {
	size := int64(len(r.Data))
	spec := w.spec(r.Data, size)
	checksums := w.checksums()
	for {
		var o *wire.Object
		var sent bool
		var err error
		if size <= maxMessage {
			o, sent, err = w.writeUnary(r, spec, checksums)
		} else {
			o, sent, err = w.writeStream(r, spec, checksums)
		}
		if err == nil {
			return o, nil
		}
		if err = w.retry.retry(w.ctx, "WriteObject", err, sent, w.idempotent()); err != nil {
			return nil, w.target.err("WriteObject", err)
		}
	}
}

// writeUnary makes one attempt of a one-message WriteObject. sent reports
// whether the request may have left the process.
func (w *Writer) writeUnary(r *chunkRef, spec *wire.WriteObjectSpec, checksums *wire.ObjectChecksums) (o *wire.Object, sent bool, err error) {
	sc := &w.scratch
	sc.first.WriteObjectSpec = spec
	sc.req.FirstMessage, sc.req.FinishWrite, sc.req.ObjectChecksums = &sc.first, true, checksums
	msg := w.life.newMsg()
	if len(r.Data) > 0 {
		w.life.add(msg, r, r.Data)
	}
	msg.Req, msg.CRC32C, msg.HasCRC = &sc.req, r.CRC32C, !w.cfg.noCRC32C
	sc.resp.Reset()
	err = w.invoke(wire.MethodWriteObject, &msg.WriteMsg, &sc.resp, w.retry.attemptTimeout())
	w.life.sent(msg)
	return sc.resp.GetResource(), msg.Marshaled(), err
}

// writeStream makes one attempt of a WriteObject client stream of several
// messages, one per 2 MiB piece of r.
func (w *Writer) writeStream(r *chunkRef, spec *wire.WriteObjectSpec, checksums *wire.ObjectChecksums) (o *wire.Object, sent bool, err error) {
	ctx, cancel := context.WithTimeout(w.ctx, w.retry.attemptTimeout())
	defer cancel()
	st, err := wire.NewWriteObjectStream(w.outgoing(ctx), w.c.conn, w.c.callOpts...)
	if err != nil {
		return nil, false, err
	}
	for i, off := 0, 0; off < len(r.Data); i++ {
		end := min(off+chunker.MaxPiece, len(r.Data))
		req := &wire.WriteObjectRequest{WriteOffset: int64(off)}
		if i == 0 {
			req.FirstMessage = &wire.WriteObjectRequest_WriteObjectSpec{WriteObjectSpec: spec}
		}
		if end == len(r.Data) {
			req.FinishWrite, req.ObjectChecksums = true, checksums
		}
		msg := w.life.newMsg()
		w.life.add(msg, r, r.Data[off:end])
		msg.Req, msg.CRC32C, msg.HasCRC = req, r.PieceCRC32C(i), !w.cfg.noCRC32C
		err = st.SendMsg(&msg.WriteMsg)
		w.life.sent(msg)
		sent = sent || msg.Marshaled()
		if err != nil {
			// The stream's status tells why it broke.
			_, err = st.CloseAndRecv()
			return nil, sent, err
		}
		off = end
	}
	resp, err := st.CloseAndRecv()
	return resp.GetResource(), sent, err
}
