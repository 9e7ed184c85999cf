package uploader

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/knob"
)

// afterContext bounds how long a call of the Writer, Upload or UploadMany
// runs once its context ended: what it still does then (finding out whether
// a request whose answer was lost was applied, waiting for gRPC to let go
// of the upload's buffers) takes at most about this long. Work that must go
// on after that, such as deleting a parallel upload's temporary objects,
// runs in the background, bounded, and Client.Close waits for it.
//
//lint:ignore U1000 the bound the docs of the Writer, Upload, UploadMany and parallel uploads name (about 1 s)
const afterContext = knob.AfterContext

// finished checks the service's object against what was sent. An object
// of another size or CRC32C is a DataLoss error that is also
// IsOutcomeUnknown: the service stored it (it replaced the live object),
// so "nothing was stored" does not hold.
func (w *Writer) finished(o *wire.Object, size int64) error {
	if o == nil {
		return &Error{Op: "Close", Bucket: w.req.Bucket, Object: w.req.Object, Code: codes.Internal, unknown: true, Err: errors.New("the service finished the upload without returning the object")}
	}
	if o.GetSize() != size {
		return &Error{Op: "Close", Bucket: w.req.Bucket, Object: w.req.Object, Code: codes.DataLoss, unknown: true,
			Err: fmt.Errorf("the service stored generation %d of %d bytes, %d were written", o.GetGeneration(), o.GetSize(), size)}
	}
	if cs := o.GetChecksums(); !w.cfg.knob.NoCRC32C && cs != nil && cs.Crc32C != nil && cs.GetCrc32C() != w.ch.CRC32C() {
		return &Error{Op: "Close", Bucket: w.req.Bucket, Object: w.req.Object, Code: codes.DataLoss, unknown: true,
			Err: fmt.Errorf("the service stored generation %d with CRC32C %08x, %08x was written", o.GetGeneration(), cs.GetCrc32C(), w.ch.CRC32C())}
	}
	w.attrs = new(ObjectAttrs)
	w.attrs.setFromObject(o)
	w.cfg.progress().Report(size)
	return nil
}
