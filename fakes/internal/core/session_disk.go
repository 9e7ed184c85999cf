package core

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"

	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/internal/wire"
)

// Resumable sessions on disk (WithDataDir). A session's record (its
// bucket, object, attributes, preconditions and declared size and
// checksums) is saved, synced, before its id is answered; every byte it
// accepts is appended to its file under DIR/sessions and synced before the
// request that carried it is answered; its finalize writes the object and
// turns the record into a finalized one in one synced write. A server
// started on DIR loads the sessions back: an open one with the bytes of
// its file (its checksums computed again), a finalized one answering with
// its object, a cancelled one as cancelled. A session the registry
// forgets (expired, evicted by the cap, failed for good, or finalized
// longer ago than the count kept) loses its record and file.

// sessionRec is a resumable session's record on disk.
type sessionRec struct {
	Bucket    string
	Object    string
	Attrs     store.Attrs
	Cond      *store.Conditions `json:",omitempty"`
	Limit     *int64            `json:",omitempty"`
	MD5       bool              `json:",omitempty"` // the upload hashes MD5
	SumCRC    *uint32           `json:",omitempty"` // the declared checksums
	SumMD5    []byte            `json:",omitempty"`
	Gen       int64             `json:",omitempty"` // finalized: the object's generation
	Cancelled bool              `json:",omitempty"`
}

// record returns up's session record. up.mu is held, or up is not shared
// yet.
func (up *Upload) record() *sessionRec {
	r := &sessionRec{Bucket: up.Bucket.Name(), Object: up.Object, Attrs: up.Attrs, Cond: up.Cond,
		Limit: up.Limit, MD5: up.MD5 != nil || up.Stored != nil && up.Stored.HasMD5(), Cancelled: up.Cancelled}
	if up.Sums != nil {
		r.SumCRC, r.SumMD5 = up.Sums.Crc32C, up.Sums.Md5Hash
	}
	if up.Stored != nil {
		r.Gen = up.Stored.Generation()
	}
	return r
}

func (r *sessionRec) encode() []byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // plain types only
	}
	return b
}

// sessionPath is the file of session id's bytes; "" on a store in memory.
func (s *Core) sessionPath(id string) string {
	if s.SessionDir == "" {
		return ""
	}
	return filepath.Join(s.SessionDir, id)
}

// saveSession saves the record and creates the file of the new session up,
// on disk.
func (s *Core) saveSession(up *Upload) error {
	p := s.sessionPath(up.ID)
	if p == "" {
		return nil
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return store.Errorf(store.KindInternal, "fake store on disk: %v", err)
	}
	f.Close()
	if err := syncDir(s.SessionDir); err != nil {
		return store.Errorf(store.KindInternal, "fake store on disk: %v", err)
	}
	if err := s.Store.SaveSession(up.ID, up.record().encode()); err != nil {
		return err
	}
	up.spath = p
	return nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// appendSession appends content to the file of the session up, synced.
// A failed write ends the session (Drop). up.mu is held.
func (up *Upload) appendSession(content []byte) {
	f, err := os.OpenFile(up.spath, os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		_, err = f.Write(content)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		log.Printf("fakes: session %s: %v: the session ends", up.ID, err)
		up.Drop()
	}
}

// saveSessionState writes the record of the session up as it stands
// (cancelled) and removes its file. up.mu is held.
func (s *Core) saveSessionState(up *Upload) {
	if up.spath == "" {
		return
	}
	if err := s.Store.SaveSession(up.ID, up.record().encode()); err != nil {
		log.Printf("fakes: session %s: %v", up.ID, err)
	}
	os.Remove(up.spath)
	up.spath = ""
}

// putSession stores the object of the session up, and on disk makes its
// record a finalized one in the same write. up.mu is held.
func (s *Core) putSession(up *Upload, c store.Content, tenant string) (*store.Object, error) {
	if up.spath == "" || up.ID == "" {
		return up.Bucket.Put(up.Object, up.Attrs, c, up.Cond, tenant)
	}
	r := up.record()
	o, err := up.Bucket.PutSession(up.Object, up.Attrs, c, up.Cond, tenant, up.ID, func(gen int64) []byte {
		r.Gen = gen
		return r.encode()
	})
	if err == nil {
		os.Remove(up.spath)
		up.spath = ""
	}
	return o, err
}

// restoreSessions loads the resumable sessions of a store on disk, and
// makes the registry forget their records with them.
func (s *Core) RestoreSessions() error {
	dir, err := s.Store.SessionDir()
	if err != nil || dir == "" {
		return err
	}
	s.SessionDir = dir
	type saved struct {
		id  string
		rec sessionRec
	}
	var all []saved
	var drop []string
	err = s.Store.SavedSessions(func(id string, v []byte) {
		var r sessionRec
		if json.Unmarshal(v, &r) != nil {
			drop = append(drop, id)
			return
		}
		all = append(all, saved{id, r})
	})
	if err != nil {
		return err
	}
	for _, sv := range all {
		up, err := s.restoreSession(sv.id, &sv.rec)
		if err != nil {
			return err
		}
		if up == nil {
			drop = append(drop, sv.id)
			continue
		}
		s.Resumables.Add(sv.id, up)
		if up.Stored != nil || up.Cancelled {
			s.Resumables.Retire(sv.id, KeepFinalized)
		}
	}
	for _, id := range drop {
		s.forgetSession(id)
	}
	s.Resumables.OnForget(s.forgetSession)
	return nil
}

// forgetSession removes the record and the file of session id.
func (s *Core) forgetSession(id string) {
	s.Store.DeleteSession(id)
	os.Remove(s.sessionPath(id))
}

// restoreSession returns the session id of record r, with the bytes of
// its file; nil if its bucket is gone.
func (s *Core) restoreSession(id string, r *sessionRec) (*Upload, error) {
	b, err := s.Store.Bucket(r.Bucket)
	if err != nil {
		return nil, nil
	}
	up := NewUpload(b, r.Object, r.Attrs, r.Cond, r.Limit)
	up.ID, up.sessions = id, &s.Resumables
	if !r.MD5 {
		up.MD5 = nil
	}
	if r.SumCRC != nil || r.SumMD5 != nil {
		up.Sums = &wire.ObjectChecksums{Crc32C: r.SumCRC, Md5Hash: r.SumMD5}
	}
	switch {
	case r.Gen != 0:
		o, err := b.Get(r.Object, r.Gen)
		if err != nil {
			return nil, nil // the object is gone: so is the session
		}
		up.Stored, up.Result, up.MD5 = o, ToObject(b, o), nil
		return up, nil
	case r.Cancelled:
		up.Gone, up.Cancelled = true, true
		return up, nil
	}
	p := s.sessionPath(id)
	f, err := os.Open(p)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	for {
		buf := make([]byte, 2<<20)
		n, err := io.ReadFull(f, buf)
		if n > 0 {
			up.AddUnchecked(buf[:n:n])
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("fakes: session %s: %w", id, err)
		}
	}
	up.spath = p
	return up, nil
}
