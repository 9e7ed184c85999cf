package uploader

import "github.com/objup/objup/internal/wire"

// oneShot sends the whole object, r, in one request of the client's
// transport, retried while the retrier allows, and checks what the service
// stored. It drops the Writer's reference on r.
func (w *Writer) oneShot(r *chunkRef) error {
	defer r.unref()
	size := int64(len(r.Data))
	w.spec(r.Data, size)
	w.scratch.hasSums = w.checksums() != nil
	tr := w.c.tr
	w.one[0] = r
	defer func() { w.one[0] = nil }()
	var o *wire.Object
	err := w.retry.do(&w.target, tr.names().write, w.idempotent(), nil, func() (string, bool, error) {
		var sent bool
		var err error
		o, sent, err = tr.writeObject(&w.upload, w.one[:], w.retry.attemptTimeout())
		return "", sent, err
	})
	if err != nil {
		return err
	}
	return w.finished(o, size)
}
