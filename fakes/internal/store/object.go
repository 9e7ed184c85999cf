package store

import (
	"io"
	"maps"
)

// Object is one stored generation of an object. Once it is in the store an
// object is never modified: a metadata update, or the overwrite or delete of
// the live object in a versioned bucket, stores a changed copy that shares
// the content. So readers keep a *Object without holding any lock, and
// read it through its methods: no code outside this package writes it.
type Object struct {
	name           string
	generation     int64
	metageneration int64
	size           int64
	crc32c         uint32
	md5            [MD5Len]byte
	hasMD5         bool

	created, updated int64 // Unix microseconds
	deleted          int64 // when a noncurrent version stopped being live; 0 if live

	attrs Attrs
	app   *appendState // nil unless written appendable

	// content is the object's bytes in parts, as received: never written
	// after the object is stored.
	content [][]byte
	blob    string // on disk: the file of the content, if not inline
	tenant  *usage
}

// MD5Len is the length of an MD5 hash.
const MD5Len = 16

// Attrs are an object's attributes that its writer sets and a metadata
// update changes. The store keeps its own copy: the metadata map and
// Extra are not changed once given to it.
type Attrs struct {
	ContentType, ContentEncoding, ContentDisposition string
	ContentLanguage, CacheControl                    string
	StorageClass                                     string // DefaultStorageClass if empty
	Metadata                                         map[string]string
	CustomTime                                       int64  // Unix microseconds, 0 if unset
	Extra                                            *Extra // nil for most objects
}

// Content is an object's bytes in parts, as received (the store keeps the
// parts, not a copy), with their size and checksums.
type Content struct {
	Parts  [][]byte
	Size   int64
	CRC32C uint32
	MD5    [MD5Len]byte
	HasMD5 bool // false: no MD5 (appendable and composed objects)

	// objs, if not nil, stands for the content instead of Parts: the
	// content of these objects on disk, one after the other (Compose,
	// Object.Content).
	objs []*Object
	// files, if not nil, stands for the content instead of Parts: the
	// caller's files (FileContent).
	files []FilePart
}

// Live reports whether o is its name's live generation.
func (o *Object) Live() bool { return o.deleted == 0 }

// copyMeta returns a shallow copy of o for a metadata change: same content,
// its own metadata map.
func (o *Object) copyMeta() *Object {
	c := *o
	c.attrs.Metadata = maps.Clone(o.attrs.Metadata)
	return &c
}

// Part returns content[off:off+n] without copying when those bytes lie in one
// part, else nil.
func (o *Object) Part(off, n int64) []byte {
	if o.blob != "" {
		return nil
	}
	for _, p := range o.content {
		if off < int64(len(p)) {
			if off+n <= int64(len(p)) {
				return p[off : off+n]
			}
			return nil
		}
		off -= int64(len(p))
	}
	return nil
}

// Read copies content from offset off into b and returns the count.
func (o *Object) Read(b []byte, off int64) int {
	if o.blob != "" {
		return o.readBlob(b, off)
	}
	n := 0
	for _, p := range o.content {
		if off >= int64(len(p)) {
			off -= int64(len(p))
			continue
		}
		n += copy(b[n:], p[off:])
		off = 0
		if n == len(b) {
			break
		}
	}
	return n
}

// WriteRange writes content[start:end] to w.
func (o *Object) WriteRange(w io.Writer, start, end int64) error {
	if o.blob != "" {
		return o.writeBlobRange(w, start, end)
	}
	off := int64(0)
	for _, p := range o.content {
		lo, hi := max(start-off, 0), min(end-off, int64(len(p)))
		off += int64(len(p))
		if lo >= hi {
			if off >= end {
				break
			}
			continue
		}
		if _, err := w.Write(p[lo:hi]); err != nil {
			return err
		}
	}
	return nil
}

// Bytes returns a copy of the whole content.
func (o *Object) Bytes() []byte {
	b := make([]byte, o.size)
	o.Read(b, 0)
	return b
}

// appendState marks an object written appendable. It is never modified
// once stored: finalizing stores a new one.
type appendState struct {
	owner     any   // the writer's state, opaque to the store
	finalized int64 // Unix microseconds; 0 while unfinalized
}

// FinalizeTime is when o was finalized: its creation for an object
// written at once, 0 for an appendable object not finalized yet.
func (o *Object) FinalizeTime() int64 {
	if o.app != nil {
		return o.app.finalized
	}
	return o.created
}

// DefaultStorageClass is the storage class of buckets and objects that name
// none.
const DefaultStorageClass = "STANDARD"

// RapidStorageClass is the storage class of a zonal bucket and of every
// object in it.
const RapidStorageClass = "RAPID"

// Unfinalized reports whether o is an appendable object not finalized
// yet; false for nil.
func (o *Object) Unfinalized() bool { return o != nil && o.app != nil && o.app.finalized == 0 }

// ComponentCount is the number of objects o was composed of, 0 for an
// object written at once.
func (o *Object) ComponentCount() int64 {
	if o.attrs.Extra == nil {
		return 0
	}
	return o.attrs.Extra.Components
}

// Name is the object's name.
func (o *Object) Name() string { return o.name }

// Generation is the object's generation.
func (o *Object) Generation() int64 { return o.generation }

// Metageneration is the object's metageneration: 1, plus one per metadata
// update.
func (o *Object) Metageneration() int64 { return o.metageneration }

// Size is the object's length in bytes.
func (o *Object) Size() int64 { return o.size }

// CRC32C is the CRC32C of the object's content.
func (o *Object) CRC32C() uint32 { return o.crc32c }

// MD5 is the MD5 of the object's content, nil when HasMD5 is false. The
// bytes are the store's: the caller must not change them.
func (o *Object) MD5() []byte {
	if !o.hasMD5 {
		return nil
	}
	return o.md5[:]
}

// HasMD5 reports whether the object has an MD5: appendable and composed
// objects have none.
func (o *Object) HasMD5() bool { return o.hasMD5 }

// Created is when the generation was stored, in Unix microseconds.
func (o *Object) Created() int64 { return o.created }

// Updated is when the generation's metadata or (for an appendable object)
// content last changed, in Unix microseconds.
func (o *Object) Updated() int64 { return o.updated }

// Deleted is when a noncurrent generation stopped being live, in Unix
// microseconds; 0 for the live generation.
func (o *Object) Deleted() int64 { return o.deleted }

// Attrs returns the object's attributes. Their metadata map and Extra are
// shared with the store: the caller must not change them.
func (o *Object) Attrs() Attrs { return o.attrs }

// Parts returns the object's content in parts, as received. They are
// shared with the store: the caller must not change them.
// On disk, content in a file is read in one part.
func (o *Object) Parts() [][]byte {
	if o.blob != "" {
		return [][]byte{o.Bytes()}
	}
	return o.content
}

// Tenant is the tenant of the call that wrote the generation.
func (o *Object) Tenant() string {
	if o.tenant == nil {
		return ""
	}
	return o.tenant.tenant
}

// Appendable reports whether the object was written appendable, and if
// so, its writer's state, as PutAppendable or ReplaceAppendable got it.
func (o *Object) Appendable() (owner any, ok bool) {
	if o.app == nil {
		return nil, false
	}
	return o.app.owner, true
}
