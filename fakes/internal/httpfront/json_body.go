package httpfront

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/objup/objup/fakes/internal/core"
	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/internal/wire"
)

// declare records a whole-object checksum the client declared: crc32c or
// md5 (md5Hash), base64 as in the JSON API.
func declare(up *core.Upload, kind, v string) error {
	if up.Sums == nil {
		up.Sums = &wire.ObjectChecksums{}
	}
	switch kind {
	case "crc32c":
		c, ok := decodeCRC32C(v)
		if !ok {
			return store.Errorf(store.KindInvalid, "crc32c %q is not the base64 of 4 bytes", v)
		}
		up.Sums.Crc32C = &c
	case "md5", "md5Hash":
		m, err := base64.StdEncoding.DecodeString(v)
		if err != nil || len(m) != store.MD5Len {
			return store.Errorf(store.KindInvalid, "md5Hash %q is not the base64 of 16 bytes", v)
		}
		up.Sums.Md5Hash = m
	}
	return nil
}

// declareHashHeader records the checksums of an X-Goog-Hash header,
// "crc32c=B64,md5=B64" (in one header or several).
func declareHashHeader(up *core.Upload, h http.Header) error {
	for _, line := range h.Values("X-Goog-Hash") {
		for _, kv := range strings.Split(line, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok || k != "crc32c" && k != "md5" {
				continue
			}
			if err := declare(up, k, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// readBody adds the request body to the upload: n bytes in parts of at most
// 2 MiB read straight into their own memory, or, when n < 0 (length not
// known: a chunked body, or a multipart part), through a pooled buffer with
// one copy into exactly sized parts, until the body's clean end. A body that
// ends early (before n bytes, a chunked body cut off, a part without its
// closing delimiter) is an error, and the caller stores nothing: GCS never
// keeps a partial object. up.mu is held, or up is not shared yet.
func readBody(r io.Reader, n int64, up *core.Upload) error {
	parts, err := readParts(r, n)
	for _, p := range parts {
		up.AddUnchecked(p)
	}
	if err != nil {
		return store.Errorf(store.KindInvalid, "%v after %d bytes", err, up.Size)
	}
	return nil
}

// readParts reads a request body as readBody does, into parts of at most
// 2 MiB, without touching any upload: what arrived, and an error if the
// body ended early. With n >= 0 it reads n bytes and no more: see bodyEnd.
func readParts(r io.Reader, n int64) ([][]byte, error) {
	var parts [][]byte
	if n >= 0 {
		for n > 0 {
			p := make([]byte, min(n, core.MaxChunk))
			k, err := io.ReadFull(r, p)
			if err != nil {
				if k > 0 {
					parts = append(parts, p[:k])
				}
				return parts, fmt.Errorf("the request body ended %d bytes before its declared length: %v", n-int64(k), err)
			}
			parts = append(parts, p)
			n -= int64(len(p))
		}
		return parts, nil
	}
	bp := core.ReadBufs.Get().(*[]byte)
	defer core.ReadBufs.Put(bp)
	buf := *bp
	for {
		// Fill the buffer, keeping the reader's own error: io.EOF is the
		// body's clean end, anything else (io.ErrUnexpectedEOF from a
		// chunked body cut off, or from a part whose closing delimiter
		// never came) an early one.
		k := 0
		var err error
		for k < len(buf) && err == nil {
			var m int
			m, err = r.Read(buf[k:])
			k += m
		}
		if k > 0 {
			parts = append(parts, bytes.Clone(buf[:k]))
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			return parts, nil
		default:
			return parts, fmt.Errorf("the request body ended early: %v", err)
		}
	}
}

// errBodyTooLong is bodyEnd's error for a body that goes on past the
// content its request declared.
var errBodyTooLong = errors.New("the request body is longer than its Content-Range")

// bodyEnd checks that a request body whose declared content was read ends
// there, cleanly: a chunked body must still end with its last (empty) chunk,
// and a request whose connection broke before that was cut short, however
// many bytes it brought. A body that goes on is errBodyTooLong.
func bodyEnd(r io.Reader) error {
	var b [1]byte
	for {
		k, err := r.Read(b[:])
		switch {
		case k > 0:
			return errBodyTooLong
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return fmt.Errorf("the request body ended early: %v", err)
		}
	}
}
