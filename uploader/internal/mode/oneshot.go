package mode

import (
	"github.com/objup/objup/chunker"
	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/retry"
	"github.com/objup/objup/uploader/internal/xfer"
)

// OneShot is the mode of an object that fits in its first chunk: one
// WriteObject call of Transport with Request, retried by Engine. It takes
// no full chunk and no buffer (it is no Streaming mode), and holds nothing
// once Finish returned. A Writer calls it as a value: it costs no
// allocation.
type OneShot struct {
	Request   *xfer.Request
	Transport xfer.Transport
	Engine    *retry.Engine
}

// Finish sends the whole object, last, in one request of the transport,
// retried while the retry engine allows, and returns what the service
// stored. The request's spec and checksums are complete.
//
// An attempt whose answer was lost may have stored the object, and may
// still store it later: the outcome is then what a later attempt's answer
// says (a success is the object), or unknown (see creation and settled).
func (m OneShot) Finish(last chunker.Chunk) (*wire.Object, error) {
	u, tr, e := m.Request, m.Transport, m.Engine
	r := u.Life.NewRef(last)
	defer r.Unref()
	u.One[0] = r
	defer func() { u.One[0] = nil }()
	var o *wire.Object
	var cr creation
	err := do(e, &u.Target, tr.Names().Write, u.Idempotent(), nil, func() (string, bool, error) {
		var sent bool
		var err error
		o, sent, err = tr.WriteObject(u, u.One[:], e.AttemptTimeout())
		u.NoteRefusal(err)
		o, err = cr.judge(o, sent, err)
		return "", sent, err
	})
	if err != nil {
		return settled(u, tr, &cr, err)
	}
	return o, nil
}

// Abort does nothing: a one-shot upload holds nothing.
func (OneShot) Abort(error) {}

// Close does nothing: a one-shot upload holds nothing.
func (OneShot) Close() {}

// Path is PathOneShot.
func (OneShot) Path() string { return PathOneShot }
