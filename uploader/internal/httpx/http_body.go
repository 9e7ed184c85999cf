package httpx

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/objup/objup/uploader/internal/xfer"
)

// httpBody is a request body over byte slices, chunk memory among them,
// sent without copying them into a buffer of objup's: it implements
// io.WriterTo, which net/http uses. Close drops the holds on the chunks it
// reads; net/http closes a request's body once it no longer reads it, which
// may be after the response arrived.
type httpBody struct {
	parts [][]byte
	holds []*xfer.Hold
	done  atomic.Bool
}

func (b *httpBody) size() int64 {
	var n int64
	for _, p := range b.parts {
		n += int64(len(p))
	}
	return n
}

// Read implements io.Reader.
func (b *httpBody) Read(p []byte) (int, error) {
	for len(b.parts) > 0 && len(b.parts[0]) == 0 {
		b.parts = b.parts[1:]
	}
	if len(b.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, b.parts[0])
	b.parts[0] = b.parts[0][n:]
	return n, nil
}

// WriteTo implements io.WriterTo: each part goes to w as it is.
func (b *httpBody) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for len(b.parts) > 0 {
		n, err := w.Write(b.parts[0])
		total += int64(n)
		b.parts[0] = b.parts[0][n:]
		if err != nil {
			return total, err
		}
		b.parts = b.parts[1:]
	}
	return total, nil
}

// Close implements io.Closer: the chunks may be reused.
func (b *httpBody) Close() error {
	if b.done.CompareAndSwap(false, true) {
		for _, h := range b.holds {
			h.Release()
		}
	}
	return nil
}

// closeResponse drains and closes a response body so its connection can be
// reused.
func closeResponse(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// bodyOver returns a request body over r.Data[from-r.Offset:] for each of
// rs, holding a reference on each chunk until net/http is done with it, with
// prefix and suffix around it.
func bodyOver(u *xfer.Request, prefix []byte, rs []*xfer.ChunkRef, from int64, suffix []byte) *httpBody {
	b := &httpBody{}
	if len(prefix) > 0 {
		b.parts = append(b.parts, prefix)
	}
	for _, r := range rs {
		if r.End() <= from {
			continue
		}
		data := r.Data[max(from-r.Offset, 0):]
		if len(data) == 0 {
			continue
		}
		b.parts = append(b.parts, data)
		b.holds = append(b.holds, u.Life.HoldRef(r))
	}
	if len(suffix) > 0 {
		b.parts = append(b.parts, suffix)
	}
	return b
}

var errNoLocation = errors.New("the service started a resumable upload without a Location")

// multipartBody frames metadata and the media for a multipart upload.
func (t *httpTransport) multipartBody(meta []byte, contentType string) (prefix, suffix []byte) {
	var p bytes.Buffer
	p.WriteString("--" + t.boundary + "\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n")
	p.Write(meta)
	p.WriteString("\r\n--" + t.boundary + "\r\nContent-Type: " + contentType + "\r\n\r\n")
	return p.Bytes(), []byte("\r\n--" + t.boundary + "--\r\n")
}
