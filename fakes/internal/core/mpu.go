package core

import (
	"github.com/objup/objup/fakes/internal/mpu"
)

// openMultipart opens the registry of multipart uploads: on disk, in the
// store's directory, with the uploads it holds, else in memory.
func (s *Core) OpenMultipart() error {
	dir, err := s.Store.Dir("multipart")
	if err == nil {
		s.MPU, err = mpu.Open(dir, s.storedSince)
	}
	if err != nil {
		return err
	}
	return nil
}

// storedSince reports whether the live object of bucket and name has size
// bytes with CRC32C crc and was stored at or after since (Unix
// microseconds): a multipart upload's complete that the store applied
// before the fake was killed (see mpu.Stored).
func (s *Core) storedSince(bucket, name string, size int64, crc uint32, since int64) bool {
	b, err := s.Store.Bucket(bucket)
	if err != nil {
		return false
	}
	o, err := b.Get(name, 0)
	return err == nil && o.Size() == size && o.CRC32C() == crc && o.Created() >= since
}
