package uploader

import "github.com/objup/objup/internal/wire"

// writeOnce sends the whole object, r, in one request of the client's
// transport, retried while the retrier allows, and returns what the
// service stored. It drops the Writer's reference on r.
//
// An attempt whose answer was lost may have stored the object: a retry
// that then meets a precondition it set itself (WithDoesNotExist) looks
// the object up, and so does a failure after such an attempt, so that a
// stored object is reported as stored (see upload.settled).
func (w *Writer) writeOnce(r *chunkRef) (*wire.Object, error) {
	defer r.unref()
	size := int64(len(r.Data))
	w.spec(r.Data, size)
	w.scratch.hasSums = w.checksums() != nil
	tr := w.c.tr
	w.one[0] = r
	defer func() { w.one[0] = nil }()
	var o *wire.Object
	var cr creation
	err := w.retry.do(&w.target, tr.names().write, w.idempotent(), nil, func() (string, bool, error) {
		var sent bool
		var err error
		o, sent, err = tr.writeObject(&w.upload, w.one[:], w.retry.attemptTimeout())
		o, err = cr.judge(&w.upload, tr, w, w.cfg.retry, o, sent, err)
		return "", sent, err
	})
	if err != nil {
		return w.settled(tr, w.expect(), cr.lost, w.cfg.retry, err)
	}
	return o, nil
}

// expect describes the object the Writer wrote, once its last chunk is
// known.
func (w *Writer) expect() *expect {
	return &expect{size: w.ch.Size(), crc: w.ch.CRC32C(), hasCRC: !w.cfg.noCRC32C, since: w.ev.Start().Wall()}
}
