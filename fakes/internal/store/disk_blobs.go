package store

import (
	"bytes"
	"crypto/rand"
	"io"
	"os"
	"path/filepath"
	"time"
)

// The files of a store on disk that hold the content of the objects
// larger than InlineMax (and of appendable objects), under DIR/blobs,
// and their removal once no object refers to them.

// blobGrace is how long a deleted object's content file outlives it.
const blobGrace = 30 * time.Second

// dropLater removes the file p after blobGrace, or at Close.
func (d *disk) dropLater(p string) {
	d.dropMu.Lock()
	defer d.dropMu.Unlock()
	if d.dropped == nil {
		d.dropped = make(map[string]*time.Timer)
	}
	d.dropped[p] = time.AfterFunc(blobGrace, func() {
		d.dropMu.Lock()
		delete(d.dropped, p)
		d.dropMu.Unlock()
		os.Remove(p)
	})
}

// dropNow removes the files that wait for their grace to end.
func (d *disk) dropNow() {
	d.dropMu.Lock()
	defer d.dropMu.Unlock()
	for p, t := range d.dropped {
		if t.Stop() {
			os.Remove(p)
		}
	}
	d.dropped = nil
}

// newBlob creates a new blob file, empty, and returns it.
func (d *disk) newBlob() (*os.File, error) {
	return os.OpenFile(filepath.Join(d.blobs, rand.Text()), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
}

// syncDir fsyncs the blobs directory, so that the files created in it
// survive a crash.
func (d *disk) syncDir() error {
	f, err := os.Open(d.blobs)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// writeContent writes c to w.
func writeContent(w io.Writer, c *Content) error {
	if c.files != nil {
		return writeFiles(w, c.files)
	}
	if c.objs != nil {
		for _, o := range c.objs {
			if err := o.WriteRange(w, 0, o.size); err != nil {
				return err
			}
		}
		return nil
	}
	for _, p := range c.Parts {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// storeContent sets the content of o, to be stored on disk, to c: inline
// up to InlineMax, else in a new blob file, written and synced.
func (d *disk) storeContent(o *Object, c *Content) error {
	if c.Size <= InlineMax {
		if c.objs == nil && c.files == nil {
			o.content = c.Parts
			return nil
		}
		var buf bytes.Buffer
		if err := writeContent(&buf, c); err != nil {
			return errDisk(err)
		}
		if buf.Len() > 0 {
			o.content = [][]byte{buf.Bytes()}
		}
		return nil
	}
	f, err := d.newBlob()
	if err != nil {
		return errDisk(err)
	}
	err = writeContent(f, c)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.syncDir()
	}
	if err != nil {
		os.Remove(f.Name())
		return errDisk(err)
	}
	o.blob, o.content = f.Name(), nil
	return nil
}

// appendBlob writes the bytes of c from offset from on at that offset of
// o's blob (created if o has none yet), synced, and returns its path. c's
// parts hold the content's last bytes (the bytes before them may have been
// dropped by the caller).
func (d *disk) appendBlob(o *Object, c *Content) (string, error) {
	path := o.blob
	var f *os.File
	var err error
	if path == "" {
		f, err = d.newBlob()
	} else {
		f, err = os.OpenFile(path, os.O_WRONLY, 0)
	}
	if err != nil {
		return "", errDisk(err)
	}
	// Write the parts' bytes at or after o.size, at their offset.
	off := c.Size
	for _, p := range c.Parts {
		off -= int64(len(p))
	}
	for _, p := range c.Parts {
		if end := off + int64(len(p)); end > o.size && err == nil {
			skip := max(o.size-off, 0)
			_, err = f.WriteAt(p[skip:], off+skip)
		}
		off += int64(len(p))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && path == "" {
		err = d.syncDir()
	}
	if err != nil {
		if path == "" {
			os.Remove(f.Name())
		}
		return "", errDisk(err)
	}
	return f.Name(), nil
}

// readBlob reads o's blob from off into p and returns the count.
func (o *Object) readBlob(p []byte, off int64) int {
	if off >= o.size {
		return 0
	}
	p = p[:min(int64(len(p)), o.size-off)]
	f, err := os.Open(o.blob)
	if err != nil {
		return 0
	}
	defer f.Close()
	n, _ := f.ReadAt(p, off)
	return n
}

// writeBlobRange writes o's blob's bytes [start, end) to w.
func (o *Object) writeBlobRange(w io.Writer, start, end int64) error {
	end = min(end, o.size)
	if start >= end {
		return nil
	}
	f, err := os.Open(o.blob)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, io.NewSectionReader(f, start, end-start))
	return err
}
