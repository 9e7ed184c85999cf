package store

import (
	"bytes"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
)

// Sessions of a store on disk: opaque records by id, for the caller to
// keep its resumable sessions across restarts.

// SaveSession writes the record v of session id, synced; it does nothing
// for a store in memory.
func (s *Store) SaveSession(id string, v []byte) error {
	if s.disk == nil {
		return nil
	}
	return s.disk.set(sessionKey(id), v)
}

// DeleteSession removes the record of session id.
func (s *Store) DeleteSession(id string) error {
	if s.disk == nil {
		return nil
	}
	if err := s.disk.enter(); err != nil {
		return err
	}
	defer s.disk.exit()
	if err := s.disk.db.Delete(sessionKey(id), pebble.NoSync); err != nil {
		return errDisk(err)
	}
	return nil
}

func sessionKey(id string) []byte { return []byte("S" + id) }

// SavedSessions calls fn with each session record saved, in id order.
// The records are the caller's: the store keeps them and gives them back.
func (s *Store) SavedSessions(fn func(id string, v []byte)) error {
	if s.disk == nil {
		return nil
	}
	if err := s.disk.enter(); err != nil {
		return err
	}
	defer s.disk.exit()
	it, err := s.disk.db.NewIter(&pebble.IterOptions{LowerBound: []byte("S"), UpperBound: []byte("T")})
	if err != nil {
		return errDisk(err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		fn(string(it.Key()[1:]), bytes.Clone(it.Value()))
	}
	return it.Error()
}

// SessionDir returns the directory for the files of resumable sessions,
// created if needed; "" for a store in memory.
func (s *Store) SessionDir() (string, error) {
	if s.disk == nil {
		return "", nil
	}
	p := filepath.Join(s.disk.dir, "sessions")
	return p, os.MkdirAll(p, 0o755)
}
