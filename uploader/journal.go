package uploader

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Journal keeps the handles of uploads in progress in a directory, one
// file per object, so that a process killed at any instruction leaves
// what the next one needs to continue them (Client.Resume). A Writer made
// WithJournal writes its handle before the first byte its session or
// parallel part carries goes out, again as the service persists more
// (every MiB, and with an fsync at most twice a second), and removes it
// once the upload ended, unless its outcome is unknown. Each write
// replaces the file whole (a temporary file, then a rename; with an fsync
// of both when it names what is about to go out): a reader sees the old
// handle or the new one, never a mix.
//
// A Journal is safe for concurrent use by the Writers of one process.
// Two processes must not upload the same object through one journal at
// the same time.
type Journal struct {
	dir string
}

// journalSuffix ends the name of every entry's file.
const journalSuffix = ".objup.json"

// OpenJournal opens the journal in dir, creating the directory (mode 0700)
// if it does not exist.
func OpenJournal(dir string) (*Journal, error) {
	if dir == "" {
		return nil, errors.New("uploader: OpenJournal: empty directory name")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("uploader: OpenJournal: %w", err)
	}
	return &Journal{dir: dir}, nil
}

// path returns the file of bucket/object's entry.
func (j *Journal) path(bucket, object string) string {
	sum := sha256.Sum256([]byte(bucket + "\x00" + object))
	return filepath.Join(j.dir, hex.EncodeToString(sum[:16])+journalSuffix)
}

// Lookup returns the handle of gs://bucket/object's upload, if the journal
// holds one.
func (j *Journal) Lookup(bucket, object string) (Handle, bool, error) {
	h, err := readHandle(j.path(bucket, object))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Handle{}, false, nil
	case err != nil:
		return Handle{}, false, err
	case h.Bucket != bucket || h.Object != object:
		return Handle{}, false, fmt.Errorf("uploader: journal entry %s names gs://%s/%s", j.path(bucket, object), h.Bucket, h.Object)
	}
	return h, true, nil
}

// Handles returns every handle the journal holds: the uploads an earlier
// process left unfinished, and those running now. An entry that cannot
// be read (a file damaged by hand, a format of another version) does not
// hide the others: Handles returns those it read and an error that names
// every entry it could not.
func (j *Journal) Handles() ([]Handle, error) {
	ents, err := os.ReadDir(j.dir)
	if err != nil {
		return nil, fmt.Errorf("uploader: journal: %w", err)
	}
	var hs []Handle
	var errs []error
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), journalSuffix) {
			continue
		}
		h, err := readHandle(filepath.Join(j.dir, e.Name()))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// Ended meanwhile.
		case err != nil:
			errs = append(errs, err)
		default:
			hs = append(hs, h)
		}
	}
	return hs, errors.Join(errs...)
}

// Remove removes the entry of gs://bucket/object, if there is one.
func (j *Journal) Remove(bucket, object string) error {
	err := os.Remove(j.path(bucket, object))
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("uploader: journal: %w", err)
}

// put writes h as its object's entry, atomically, and durably when sync
// is set.
func (j *Journal) put(h *Handle, sync bool) error {
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	path := j.path(h.Bucket, h.Object)
	f, err := os.CreateTemp(j.dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("uploader: journal: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(append(b, '\n'))
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("uploader: journal: %w", err)
	}
	if !sync {
		return nil
	}
	return syncDir(j.dir)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("uploader: journal: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("uploader: journal: %w", err)
	}
	return nil
}

// readHandle reads the entry in path.
func readHandle(path string) (Handle, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Handle{}, err
	}
	var h Handle
	if err := json.Unmarshal(b, &h); err != nil {
		return Handle{}, fmt.Errorf("uploader: journal entry %s: %w", path, err)
	}
	if h.Version != handleVersion {
		return Handle{}, fmt.Errorf("uploader: journal entry %s has format version %d, want %d", path, h.Version, handleVersion)
	}
	return h, nil
}
