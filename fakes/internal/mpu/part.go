package mpu

import (
	"crypto/md5"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"time"

	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/internal/crc32c"
)

// chunkSize is the size of the pieces a part is read in: in memory, each
// piece is kept as read.
const chunkSize = 2 << 20

// ErrBodyEnded is the cause of an error of Put whose body ended before the
// bytes it declared (the client's connection broke, or a fault cut it).
var ErrBodyEnded = errors.New("the request body ended early")

// sums computes a part's checksums as its bytes arrive.
type sums struct {
	size int64
	crc  uint32
	md5  hash.Hash
}

func (s *sums) add(p []byte) {
	s.size += int64(len(p))
	s.crc = crc32.Update(s.crc, crc32c.Table, p)
	s.md5.Write(p)
}

// Put reads the part number n from body, size bytes (as its request's
// Content-Length declared them), or to its end if size < 0, checksumming
// it once as it arrives. It then calls check with the part (its bytes are
// not there yet); if check returns nil the part replaces the one of its
// number, if any, and Put returns it. Nothing is kept if the body ends
// early (ErrBodyEnded), runs past MaxPartSize, or check fails, nor if the
// upload ended meanwhile (KindNoSuchUpload). On disk the part goes
// straight to a file, synced before Put returns; in memory it is kept in
// pieces of 2 MiB. The upload's lock is held only to put the part in
// place, not while the body is read.
func (u *Upload) Put(n int, body io.Reader, size int64, check func(*Part) error) (*Part, error) {
	if n < 1 || n > MaxPartNumber {
		return nil, store.Errorf(store.KindInvalid, "Part number must be an integer between 1 and %d, inclusive; not %d.", MaxPartNumber, n)
	}
	if size > MaxPartSize {
		return nil, errTooLarge(size)
	}
	s := &sums{md5: md5.New()}
	p := &Part{Number: n}
	var err error
	if u.dir != "" {
		p.path, err = u.writeTemp(body, size, s)
	} else {
		p.chunks, err = readChunks(body, size, s)
	}
	if err == nil {
		p.Size, p.CRC32C, p.Modified = s.size, s.crc, time.Now().UnixMicro()
		s.md5.Sum(p.MD5[:0])
		err = check(p)
	}
	if err == nil {
		err = u.install(p)
	}
	if err != nil {
		u.removeTemp(p)
		return nil, err
	}
	return p, nil
}

func errTooLarge(size int64) error {
	return store.Errorf(KindEntityTooLarge, "Your proposed upload exceeds the maximum allowed size: a part has at most %d bytes, this one %d.", int64(MaxPartSize), size)
}

// install puts p in place of the part of its number.
func (u *Upload) install(p *Part) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.gone {
		return ErrNoSuchUpload(u.ID)
	}
	if p.path != "" {
		path, err := u.commitTemp(p)
		if err != nil {
			return err
		}
		p.path = path
	}
	u.parts[p.Number] = p
	return nil
}

// readChunks reads body (size bytes, or to its end if size < 0) into
// pieces of at most chunkSize.
func readChunks(body io.Reader, size int64, s *sums) ([][]byte, error) {
	var out [][]byte
	for size < 0 || s.size < size {
		want := int64(chunkSize)
		if size >= 0 {
			want = min(want, size-s.size)
		}
		buf := make([]byte, want)
		k, err := io.ReadFull(body, buf)
		if k > 0 {
			out = append(out, buf[:k:k])
			s.add(buf[:k])
		}
		if s.size > MaxPartSize {
			return nil, errTooLarge(s.size)
		}
		switch {
		case err == nil:
		case size < 0 && (err == io.EOF || err == io.ErrUnexpectedEOF):
			return out, nil
		default:
			return nil, fmt.Errorf("%w after %d bytes: %v", ErrBodyEnded, s.size, err)
		}
	}
	return out, nil
}

// copyBody copies body (size bytes, or to its end if size < 0) to w
// through buf.
func copyBody(w io.Writer, body io.Reader, size int64, s *sums, buf []byte) error {
	for size < 0 || s.size < size {
		want := int64(len(buf))
		if size >= 0 {
			want = min(want, size-s.size)
		}
		k, err := io.ReadFull(body, buf[:want])
		if k > 0 {
			s.add(buf[:k])
			if s.size > MaxPartSize {
				return errTooLarge(s.size)
			}
			if _, werr := w.Write(buf[:k]); werr != nil {
				return store.Errorf(store.KindInternal, "fake store on disk: %v", werr)
			}
		}
		switch {
		case err == nil:
		case size < 0 && (err == io.EOF || err == io.ErrUnexpectedEOF):
			return nil
		default:
			return fmt.Errorf("%w after %d bytes: %v", ErrBodyEnded, s.size, err)
		}
	}
	return nil
}
