package uploader

import (
	"net/http"

	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/xfer"
)

// spec completes the object's WriteObjectSpec, which the options filled:
// the name and bucket, the content type (sniffed from first, the start of the
// data, when no option set one) and the size, or -1 if unknown.
func (w *Writer) spec(first []byte, size int64) *wire.WriteObjectSpec {
	s := &w.req.Scratch.Spec
	o := s.Resource
	o.Name, o.Bucket = w.req.Object, w.req.Resource()
	if o.ContentType == "" {
		if len(first) > 512 {
			first = first[:512]
		}
		o.ContentType = http.DetectContentType(first)
	}
	if size >= 0 {
		w.req.Scratch.Size = size
		s.ObjectSize = &w.req.Scratch.Size
	}
	return s
}

// checksums returns the whole-object checksums to send at finish_write: the
// caller's (WithSendCRC32C, WithSendMD5), else those computed while writing.
func (w *Writer) checksums() *wire.ObjectChecksums {
	cfg := &w.cfg
	hasCRC := cfg.hasCRC || !cfg.knob.NoCRC32C
	if !hasCRC && !cfg.knob.MD5 && cfg.sendMD5 == nil {
		return nil
	}
	cs := &w.req.Scratch.Checksums
	if hasCRC {
		w.req.Scratch.CRC = w.ch.CRC32C()
		if cfg.hasCRC {
			w.req.Scratch.CRC = cfg.sendCRC
		}
		cs.Crc32C = &w.req.Scratch.CRC
	}
	switch {
	case cfg.sendMD5 != nil:
		cs.Md5Hash = cfg.sendMD5[:]
	case cfg.knob.MD5:
		cs.Md5Hash = w.ch.MD5()
	}
	return cs
}

// errOf wraps the error of op on t's object.
func errOf(t *xfer.Target, op string, err error) *Error {
	return newError(op, t.Bucket, t.Object, err)
}
