package mpu

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/objup/objup/fakes/internal/store"
)

// Uploads on disk. Each upload is a directory under the registry's, named
// by its ID, that holds:
//
//	upload     its record (uploadRec, JSON), written to a temporary file,
//	           synced and renamed into place, the directory synced, before
//	           the initiate is answered;
//	N          part N: its bytes, then a trailer of its CRC32C and MD5 and
//	           a magic (trailerLen bytes), written to a temporary file as
//	           the body arrives, synced, and renamed over the part before,
//	           the directory synced, before the part's upload is answered;
//	tmp-*      a part on its way (removed at a restart);
//	completing the object a complete is storing (completingRec, JSON),
//	           written synced before the store is asked to.
//
// A complete writes completing, has the store copy the parts into the
// object, then removes the directory; an abort removes it. Open loads
// every directory with a record back, a part's size and checksums from
// its trailer and its time from the file's; a directory without a record
// (an initiate cut short) is removed, and so is one whose complete the
// store holds (Stored says so for completing's object): a complete is
// applied once, even when the fake is killed between the store's write
// and the directory's removal. One whose complete the store does not hold
// goes on as an upload in progress.

// uploadRec is an upload's record on disk.
type uploadRec struct {
	Bucket, Object string
	Attrs          store.Attrs
	Initiated      int64
}

// completingRec is the object a complete is storing: its size and CRC32C,
// and the time (Unix microseconds) before the store's write.
type completingRec struct {
	Size   int64
	CRC32C uint32
	Since  int64
}

// Stored reports whether the store holds, under bucket and object, a
// generation of size bytes with CRC32C crc stored at or after since (Unix
// microseconds): a complete that was applied.
type Stored func(bucket, object string, size int64, crc uint32, since int64) bool

const (
	completingName = "completing"
	recName        = "upload"
	tmpPrefix      = "tmp-"
	magic          = "objupMP1"
	trailerLen     = 4 + 16 + int64(len(magic))
)

func diskErr(err error) error {
	return store.Errorf(store.KindInternal, "fake store on disk: multipart upload: %v", err)
}

// Open returns a registry in memory if dir is "", else one on disk in dir
// (created if needed) with the uploads it holds; stored tells a complete
// that was applied (see the layout above).
func Open(dir string, stored Stored) (*Registry, error) {
	r := newRegistry(dir)
	if dir == "" {
		return r, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		u, err := r.load(e.Name(), stored)
		if err != nil {
			return nil, fmt.Errorf("mpu: %s: %w", filepath.Join(dir, e.Name()), err)
		}
		if u == nil {
			os.RemoveAll(filepath.Join(dir, e.Name()))
			continue
		}
		r.add(u)
		if t, err := strconv.ParseInt(u.ID[:min(16, len(u.ID))], 16, 64); err == nil {
			r.last = max(r.last, t)
		}
	}
	return r, nil
}

// load reads the upload in directory id; nil if it has no record, or its
// complete was applied.
func (r *Registry) load(id string, stored Stored) (*Upload, error) {
	dir := filepath.Join(r.dir, id)
	b, err := os.ReadFile(filepath.Join(dir, recName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec uploadRec
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, completingName)); err == nil {
		var c completingRec
		if json.Unmarshal(b, &c) == nil && stored(rec.Bucket, rec.Object, c.Size, c.CRC32C, c.Since) {
			return nil, nil
		}
		os.Remove(filepath.Join(dir, completingName))
	}
	u := &Upload{ID: id, Bucket: rec.Bucket, Object: rec.Object, Attrs: rec.Attrs, Initiated: rec.Initiated,
		reg: r, dir: dir, parts: make(map[int]*Part)}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, tmpPrefix) {
			os.Remove(filepath.Join(dir, name))
			continue
		}
		n, err := strconv.Atoi(name)
		if err != nil || n < 1 || n > MaxPartNumber {
			continue
		}
		p, err := readPart(filepath.Join(dir, name), n)
		if err != nil {
			return nil, err
		}
		u.parts[n] = p
	}
	return u, nil
}

// readPart reads the size, checksums and time of the part in file path.
func readPart(path string, n int) (*Part, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	var t [trailerLen]byte
	if st.Size() < trailerLen {
		return nil, fmt.Errorf("part %d: %d bytes, shorter than its trailer", n, st.Size())
	}
	if _, err := f.ReadAt(t[:], st.Size()-trailerLen); err != nil {
		return nil, err
	}
	if string(t[20:]) != magic {
		return nil, fmt.Errorf("part %d: no trailer", n)
	}
	p := &Part{Number: n, Size: st.Size() - trailerLen, CRC32C: binary.BigEndian.Uint32(t[:4]),
		Modified: st.ModTime().UnixMicro(), path: path}
	copy(p.MD5[:], t[4:20])
	return p, nil
}

// save makes the directory of the new upload u and writes its record,
// synced; it does nothing in memory.
func (r *Registry) save(u *Upload) error {
	if r.dir == "" {
		return nil
	}
	u.dir = filepath.Join(r.dir, u.ID)
	if err := os.Mkdir(u.dir, 0o755); err != nil {
		return diskErr(err)
	}
	b, err := json.Marshal(&uploadRec{Bucket: u.Bucket, Object: u.Object, Attrs: u.Attrs, Initiated: u.Initiated})
	if err == nil {
		err = writeSynced(u.dir, recName, b)
	}
	if err == nil {
		err = syncDir(r.dir)
	}
	if err != nil {
		os.RemoveAll(u.dir)
		return diskErr(err)
	}
	return nil
}

// writeSynced writes b to dir/name through a synced temporary file
// renamed into place, and syncs dir.
func writeSynced(dir, name string, b []byte) error {
	f, err := os.CreateTemp(dir, tmpPrefix+"*")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// drop removes the files of u, which ended. u.mu is held.
func (r *Registry) drop(u *Upload) {
	if u.dir == "" {
		return
	}
	if err := os.RemoveAll(u.dir); err != nil {
		log.Printf("fakes: multipart upload %s: %v", u.ID, err)
	}
	syncDir(r.dir)
}

// writeTemp writes a part's body to a new temporary file of u's
// directory, with its trailer, synced, and returns the file's path.
func (u *Upload) writeTemp(body io.Reader, size int64, s *sums) (string, error) {
	f, err := os.CreateTemp(u.dir, tmpPrefix+"*")
	if errors.Is(err, os.ErrNotExist) {
		return "", ErrNoSuchUpload(u.ID) // aborted or completed meanwhile
	}
	if err != nil {
		return "", diskErr(err)
	}
	err = copyBody(f, body, size, s, make([]byte, 1<<20))
	if err == nil {
		var t [trailerLen]byte
		binary.BigEndian.PutUint32(t[:4], s.crc)
		s.md5.Sum(t[4:4])
		copy(t[20:], magic)
		if _, werr := f.Write(t[:]); werr != nil {
			err = diskErr(werr)
		}
	}
	if err == nil {
		if serr := f.Sync(); serr != nil {
			err = diskErr(serr)
		}
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = diskErr(cerr)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// commitTemp renames the temporary file of p over the file of its number
// and returns that file's path. u.mu is held.
func (u *Upload) commitTemp(p *Part) (string, error) {
	path := filepath.Join(u.dir, strconv.Itoa(p.Number))
	if err := os.Rename(p.path, path); err != nil {
		return "", diskErr(err)
	}
	if err := syncDir(u.dir); err != nil {
		return "", diskErr(err)
	}
	return path, nil
}

// removeTemp removes the temporary file of a part that was not kept.
func (u *Upload) removeTemp(p *Part) {
	if p.path != "" && strings.HasPrefix(filepath.Base(p.path), tmpPrefix) {
		os.Remove(p.path)
	}
}

// completing notes, synced, the object a complete of u is about to store
// (see the layout above); nothing in memory. done removes the note of a
// complete the store refused.
func (u *Upload) completing(size int64, crc uint32) (done func(stored bool), err error) {
	if u.dir == "" {
		return func(bool) {}, nil
	}
	b, err := json.Marshal(&completingRec{Size: size, CRC32C: crc, Since: time.Now().UnixMicro()})
	if err == nil {
		err = writeSynced(u.dir, completingName, b)
	}
	if err != nil {
		return nil, diskErr(err)
	}
	return func(stored bool) {
		if !stored {
			os.Remove(filepath.Join(u.dir, completingName))
		}
	}, nil
}
