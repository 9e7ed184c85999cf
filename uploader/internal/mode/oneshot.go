package mode

import (
	"context"

	"github.com/objup/objup/chunker"
	"github.com/objup/objup/internal/wire"
)

// OneShot is the mode of an object that fits in its first chunk: one
// WriteObject call. It holds only its Host, a pointer, so its interface
// value costs no allocation.
type OneShot[H Host] struct{ H H }

// Push panics: a one-shot upload takes no full chunk.
func (OneShot[H]) Push(chunker.Chunk) error {
	panic("uploader: a one-shot upload takes no full chunk")
}

// Buffer panics: a one-shot upload takes no buffer.
func (OneShot[H]) Buffer() (*[]byte, error) {
	panic("uploader: a one-shot upload takes no buffer")
}

// Finish sends the whole object, last, in one request of the transport,
// retried while the retry engine allows, and returns what the service
// stored.
//
// An attempt whose answer was lost may have stored the object, and may
// still store it later: the outcome is then what a later attempt's answer
// says (a success is the object), or unknown (see creation and settled).
func (m OneShot[H]) Finish(last chunker.Chunk) (*wire.Object, error) {
	h := m.H
	u := h.Request()
	r := u.Life.NewRef(last)
	defer r.Unref()
	if err := h.SentCRCMismatch(); err != nil {
		return nil, err
	}
	size := int64(len(r.Data))
	h.Spec(r.Data, size)
	h.Checksums()
	tr, e := h.Transport(), h.Engine()
	u.One[0] = r
	defer func() { u.One[0] = nil }()
	var o *wire.Object
	var cr creation
	err := do(e, &u.Target, tr.Names().Write, u.Idempotent(), nil, func() (string, bool, error) {
		var sent bool
		var err error
		o, sent, err = tr.WriteObject(u, u.One[:], e.AttemptTimeout())
		o, err = cr.judge(o, sent, err)
		return "", sent, err
	})
	if err != nil {
		return settled(u, tr, &cr, err)
	}
	return o, nil
}

// Abort does nothing: a one-shot upload holds nothing.
func (OneShot[H]) Abort(error) {}

// Close does nothing: a one-shot upload holds nothing.
func (OneShot[H]) Close() {}

// Path is PathOneShot.
func (OneShot[H]) Path() string { return PathOneShot }

// Flush is ErrNoFlush.
func (OneShot[H]) Flush(context.Context, chunker.Chunk) (int64, error) { return 0, ErrNoFlush }
