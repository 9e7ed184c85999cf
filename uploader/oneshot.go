package uploader

import (
	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/xfer"
)

// writeOnce sends the whole object, r, in one request of the client's
// transport, retried while the retrier allows, and returns what the
// service stored. It drops the Writer's reference on r.
//
// An attempt whose answer was lost may have stored the object, and may
// still store it later: the outcome is then what a later attempt's answer
// says (a success is the object), or unknown (see creation and
// upload.settled).
func (w *Writer) writeOnce(r *xfer.ChunkRef) (*wire.Object, error) {
	defer r.Unref()
	if err := w.sentCRCMismatch(); err != nil {
		return nil, err
	}
	size := int64(len(r.Data))
	w.spec(r.Data, size)
	w.req.Scratch.HasSums = w.checksums() != nil
	tr := w.client().tr
	w.req.One[0] = r
	defer func() { w.req.One[0] = nil }()
	var o *wire.Object
	var cr creation
	err := w.retry.do(&w.req.Target, tr.Names().Write, w.req.Idempotent(), nil, func() (string, bool, error) {
		var sent bool
		var err error
		o, sent, err = tr.WriteObject(&w.req, w.req.One[:], w.retry.attemptTimeout())
		o, err = cr.judge(o, sent, err)
		return "", sent, err
	})
	if err != nil {
		return settled(&w.req, tr, &cr, err)
	}
	return o, nil
}
