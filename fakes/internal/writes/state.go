package writes

import (
	"bytes"
	"hash"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/internal/wire"
)

// MaxMessage is the service's limit on the content of one message, both
// ways (MAX_WRITE_CHUNK_BYTES and MAX_READ_CHUNK_BYTES).
const MaxMessage = 2 << 20

// State is what a write has taken so far: the bytes accepted and their
// checksums, and what the writer declared. Its methods do not lock: the
// caller serializes them.
type State struct {
	Size  int64                 // bytes accepted
	CRC   uint32                // CRC32C of the bytes accepted
	MD5   hash.Hash             // MD5 of the bytes accepted; nil unless hashed
	Limit *int64                // the declared object_size, if any
	Sums  *wire.ObjectChecksums // the declared whole-object checksums, if any
}

// CheckMessage checks a message of n bytes written at offset, before its
// content is taken: the message limit, the offset (which must be where
// the bytes so far end, or, with overlap, at or before it) and the
// declared object size.
func (s *State) CheckMessage(offset, n int64, overlap bool) error {
	if n > MaxMessage {
		return status.Errorf(codes.InvalidArgument, "message content of %d bytes exceeds the limit of %d", n, MaxMessage)
	}
	if offset > s.Size || offset < s.Size && !overlap || offset < 0 {
		return OffsetError(offset, s.Size, "write_offset")
	}
	if lim := s.Limit; lim != nil && offset+n > *lim {
		return status.Errorf(codes.InvalidArgument, "data beyond object_size: %d bytes received, then %d more, object_size is %d", s.Size, offset+n-s.Size, *lim)
	}
	return nil
}

// CheckCRC compares the CRC32C a message of n bytes at offset was sent
// with, sent, with the one computed over its content, got.
func CheckCRC(offset, n int64, sent, got uint32) error {
	if sent != got {
		return status.Errorf(codes.DataLoss, "CRC32C mismatch in the message at offset %d (%d bytes): sent %#08x, computed %#08x", offset, n, sent, got)
	}
	return nil
}

// CheckFinish checks a finish_write without content at offset.
func (s *State) CheckFinish(offset int64) error {
	if offset != s.Size {
		return OffsetError(offset, s.Size, "finish_write")
	}
	return nil
}

// Add counts n more bytes whose CRC32C is crc. The caller writes them to
// MD5, if set.
func (s *State) Add(n int64, crc uint32) {
	if s.Size == 0 {
		s.CRC = crc // the combine with the CRC of nothing is crc itself
	} else {
		s.CRC = crc32c.Combine(s.CRC, crc, n)
	}
	s.Size += n
}

// Declare adds the whole-object checksums a message declares to those
// declared before.
func (s *State) Declare(sums *wire.ObjectChecksums) {
	if sums != nil {
		s.Sums = MergeSums(s.Sums, sums)
	}
}

// CheckSize checks, at the finish, that the object has its declared size.
func (s *State) CheckSize() error {
	if lim := s.Limit; lim != nil && *lim != s.Size {
		return status.Errorf(codes.InvalidArgument, "finish_write after %d bytes, but object_size is %d", s.Size, *lim)
	}
	return nil
}

// Finish checks a complete write: its declared size and its declared
// checksums. It returns the MD5 of the content appended to dst, nil if not
// hashed. A checksum that does not match is data loss: nothing may be
// stored.
func (s *State) Finish(dst []byte) ([]byte, error) {
	if err := s.CheckSize(); err != nil {
		return nil, err
	}
	var sum []byte
	if s.MD5 != nil {
		sum = s.MD5.Sum(dst)
	}
	if want := s.Sums; want != nil {
		if want.Crc32C != nil && *want.Crc32C != s.CRC {
			return nil, store.Errorf(store.KindDataLoss, "object CRC32C mismatch: sent %#08x, computed %#08x over %d bytes; nothing stored", *want.Crc32C, s.CRC, s.Size)
		}
		if len(want.Md5Hash) > 0 && !bytes.Equal(want.Md5Hash, sum) {
			return nil, store.Errorf(store.KindDataLoss, "object MD5 mismatch: sent %x, computed %x over %d bytes; nothing stored", want.Md5Hash, sum, s.Size)
		}
	}
	return sum, nil
}

// OffsetError is the error for a write at offset, or a finish there, when
// size bytes were received so far.
func OffsetError(offset, size int64, field string) error {
	if offset > size {
		return status.Errorf(codes.InvalidArgument, "%s %d leaves a gap: %d bytes received so far", field, offset, size)
	}
	return status.Errorf(codes.InvalidArgument, "%s %d overlaps the %d bytes received so far", field, offset, size)
}

// MergeSums returns the declared checksums prev with those of next added.
func MergeSums(prev, next *wire.ObjectChecksums) *wire.ObjectChecksums {
	out := &wire.ObjectChecksums{}
	if prev != nil {
		out.Crc32C, out.Md5Hash = prev.Crc32C, prev.Md5Hash
	}
	if next.Crc32C != nil {
		out.Crc32C = next.Crc32C
	}
	if len(next.Md5Hash) > 0 {
		out.Md5Hash = next.Md5Hash
	}
	return out
}
