// Package mpu keeps the XML API multipart uploads in progress for the
// fake GCS: each upload's bucket, object name and attributes (those its
// initiate request gave), and the parts uploaded to it, which a complete
// joins into one object of the store. It knows no wire: the fake's XML
// front parses the requests, checks roles and digests, and writes the
// answers.
//
// A Registry is in memory (Open("")) or on disk (Open(dir)), as the store
// it serves: on disk every upload and every part lives in files under dir
// (see disk.go), written and synced before the request that made them is
// answered, so that uploads survive a restart and a part of any size
// never sits in memory.
//
// The rules are GCS's, which documents its XML API multipart uploads as
// compatible with Amazon S3's: part numbers from 1 to 10,000, a part of at
// most 5 GiB, a part uploaded again under its number replacing the one
// before; a complete names its parts in strictly ascending order, each
// with the ETag its upload answered, and every part but the last holds at
// least 5 MiB. An upload ends with its complete or its abort: its parts
// are dropped, and its ID is then unknown.
package mpu

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/btree"
	"google.golang.org/grpc/codes"

	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/internal/crc32c"
)

// Limits of GCS's XML API multipart uploads (as S3's).
const (
	MaxPartNumber = 10000
	MinPartSize   = 5 << 20 // every part of a complete but the last
	MaxPartSize   = 5 << 30
)

// The errors of the package, by XML API error code (the Kind's Reason).
var (
	KindNoSuchUpload     = store.Kind{Code: codes.NotFound, HTTP: http.StatusNotFound, Reason: "NoSuchUpload"}
	KindInvalidPart      = store.Kind{Code: codes.InvalidArgument, HTTP: http.StatusBadRequest, Reason: "InvalidPart"}
	KindInvalidPartOrder = store.Kind{Code: codes.InvalidArgument, HTTP: http.StatusBadRequest, Reason: "InvalidPartOrder"}
	KindEntityTooSmall   = store.Kind{Code: codes.InvalidArgument, HTTP: http.StatusBadRequest, Reason: "EntityTooSmall"}
	KindEntityTooLarge   = store.Kind{Code: codes.InvalidArgument, HTTP: http.StatusBadRequest, Reason: "EntityTooLarge"}
)

// ErrNoSuchUpload is the error for an upload ID that names no upload in
// progress: unknown, completed or aborted.
func ErrNoSuchUpload(id string) *store.Error {
	return store.Errorf(KindNoSuchUpload, "The requested upload %q was not found: it does not exist, or it was completed or aborted.", id)
}

// Registry holds the multipart uploads in progress. Its methods are safe
// for concurrent use.
type Registry struct {
	dir string // "": in memory

	mu    sync.Mutex
	byID  map[string]*Upload
	index *btree.BTreeG[*Upload] // by bucket, object, then ID (initiation order)
	last  int64                  // the last ID's time stamp, to keep IDs increasing
}

// Upload is one multipart upload. Its ID, bucket, object, attributes and
// initiation time never change; its parts change under its lock.
type Upload struct {
	ID, Bucket, Object string
	Attrs              store.Attrs
	Initiated          int64 // Unix microseconds

	reg *Registry
	dir string // on disk: the upload's directory

	mu    sync.Mutex
	parts map[int]*Part
	gone  bool // completed or aborted
}

// Part is one uploaded part.
type Part struct {
	Number   int
	Size     int64
	CRC32C   uint32
	MD5      [16]byte
	Modified int64 // Unix microseconds

	chunks [][]byte // in memory: the bytes, as read
	path   string   // on disk: the file that holds them
}

// ETag is the part's ETag as GCS and S3 answer it: its MD5 in hex, quoted.
func (p *Part) ETag() string { return `"` + hex.EncodeToString(p.MD5[:]) + `"` }

func less(a, b *Upload) bool {
	if a.Bucket != b.Bucket {
		return a.Bucket < b.Bucket
	}
	if a.Object != b.Object {
		return a.Object < b.Object
	}
	return a.ID < b.ID
}

func newRegistry(dir string) *Registry {
	return &Registry{dir: dir, byID: make(map[string]*Upload), index: btree.NewG(16, less)}
}

// newID returns a new upload ID: its time stamp in hex (so that IDs sort in
// initiation order), then random text. r.mu is held.
func (r *Registry) newID() string {
	t := max(time.Now().UnixNano(), r.last+1)
	r.last = t
	return fmt.Sprintf("%016x", t) + rand.Text()
}

// Create starts an upload of object in bucket with the attributes a (the
// store keeps a's map: the caller must not change it afterwards) and
// returns it; on disk its record is synced first.
func (r *Registry) Create(bucket, object string, a store.Attrs) (*Upload, error) {
	r.mu.Lock()
	id := r.newID()
	r.mu.Unlock()
	u := &Upload{ID: id, Bucket: bucket, Object: object, Attrs: a, Initiated: time.Now().UnixMicro(),
		reg: r, parts: make(map[int]*Part)}
	if err := r.save(u); err != nil {
		return nil, err
	}
	r.add(u)
	return u, nil
}

func (r *Registry) add(u *Upload) {
	r.mu.Lock()
	r.byID[u.ID] = u
	r.index.ReplaceOrInsert(u)
	r.mu.Unlock()
}

// Get returns the upload id, if it is in progress.
func (r *Registry) Get(id string) (*Upload, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	u, ok := r.byID[id]
	return u, ok
}

// forget removes u from the registry and drops its parts. u.mu is held.
func (r *Registry) forget(u *Upload) {
	u.gone = true
	r.mu.Lock()
	delete(r.byID, u.ID)
	r.index.Delete(u)
	r.mu.Unlock()
	u.parts = nil
	r.drop(u)
}

// List returns up to max uploads of bucket whose object names start with
// prefix, in the order of their names, then of their initiation, from
// just after keyMarker (with idMarker: just after that upload of
// keyMarker), and whether more follow.
func (r *Registry) List(bucket, prefix, keyMarker, idMarker string, max int) (out []*Upload, truncated bool) {
	pivot := &Upload{Bucket: bucket, Object: keyMarker, ID: idMarker}
	if idMarker == "" && keyMarker != "" {
		pivot.ID = "\xff" // after every upload of keyMarker
	}
	if prefix > pivot.Object {
		pivot = &Upload{Bucket: bucket, Object: prefix}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.index.AscendGreaterOrEqual(pivot, func(u *Upload) bool {
		switch {
		case u.Bucket != bucket || !strings.HasPrefix(u.Object, prefix):
			return false
		case u.Object == pivot.Object && u.ID == pivot.ID:
			return true // the marker itself
		case len(out) == max:
			truncated = true
			return false
		}
		out = append(out, u)
		return true
	})
	return out, truncated
}

// All returns every upload in progress, in the order of List.
func (r *Registry) All() []*Upload {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*Upload, 0, r.index.Len())
	r.index.Ascend(func(u *Upload) bool {
		out = append(out, u)
		return true
	})
	return out
}

// Parts returns the upload's parts in the order of their numbers, and
// false if the upload is no longer in progress.
func (u *Upload) Parts() ([]Part, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.gone {
		return nil, false
	}
	out := make([]Part, 0, len(u.parts))
	for _, p := range u.parts {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	return out, true
}

// Abort ends the upload: its parts are dropped. It fails with
// KindNoSuchUpload if the upload already ended.
func (u *Upload) Abort() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.gone {
		return ErrNoSuchUpload(u.ID)
	}
	u.reg.forget(u)
	return nil
}

// Ref names a part in a complete request: its number and the ETag its
// upload was answered with (quoted or not).
type Ref struct {
	Number int
	ETag   string
}

// Complete checks refs against the upload's parts and hands put the
// content of the parts they name, one after the other, with its size and
// CRC32C (combined from the parts', no byte read again) and no MD5: on disk
// as files (store.FileContent), in memory as the parts' bytes. If put
// succeeds, the upload ends: every part is dropped, those not named too.
// If it fails, the upload stays as it was and Complete returns put's
// error. The upload's lock is held across put, so a part uploaded meanwhile
// waits and then finds the upload ended.
func (u *Upload) Complete(refs []Ref, put func(store.Content) error) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.gone {
		return ErrNoSuchUpload(u.ID)
	}
	parts := make([]*Part, len(refs))
	for i, ref := range refs {
		if i > 0 && ref.Number <= refs[i-1].Number {
			return store.Errorf(KindInvalidPartOrder, "The list of parts was not in ascending order: part %d follows part %d. Parts must be listed in order of their numbers, each once.", ref.Number, refs[i-1].Number)
		}
		p := u.parts[ref.Number]
		if p == nil || !sameETag(ref.ETag, p.ETag()) {
			return store.Errorf(KindInvalidPart, "One or more of the specified parts could not be found: part %d with ETag %s is not a part of upload %q. The part may not have been uploaded, or its ETag may not match the one its upload answered.", ref.Number, ref.ETag, u.ID)
		}
		parts[i] = p
	}
	var (
		size  int64
		crc   uint32
		mem   [][]byte
		files []store.FilePart
	)
	for i, p := range parts {
		if i < len(parts)-1 && p.Size < MinPartSize {
			return store.Errorf(KindEntityTooSmall, "Your proposed upload is smaller than the minimum allowed size: part %d has %d bytes, and every part but the last must have at least %d.", p.Number, p.Size, MinPartSize)
		}
		crc = crc32c.Combine(crc, p.CRC32C, p.Size)
		size += p.Size
		if p.path != "" {
			files = append(files, store.FilePart{Path: p.path, Size: p.Size})
		} else {
			mem = append(mem, p.chunks...)
		}
	}
	c := store.Content{Parts: mem, Size: size, CRC32C: crc}
	if files != nil {
		c = store.FileContent(files, size, crc)
	}
	done, err := u.completing(size, crc)
	if err != nil {
		return err
	}
	err = put(c)
	done(err == nil)
	if err != nil {
		return err
	}
	u.reg.forget(u)
	return nil
}

// sameETag reports whether two ETags are the same, quoted or not, in any
// case of their hex digits.
func sameETag(a, b string) bool {
	return strings.EqualFold(strings.Trim(strings.TrimSpace(a), `"`), strings.Trim(b, `"`))
}
