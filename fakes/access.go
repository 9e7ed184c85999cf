package fakes

import (
	"crypto/md5"
	"hash/crc32"
	"maps"
	"slices"
	"time"

	"github.com/objup/objup/internal/crc32c"
)

// ObjectAttrs are the attributes of a stored object, as [Server.Object] and
// [Server.ListObjects] report them.
type ObjectAttrs struct {
	Bucket, Name   string
	Generation     int64
	Metageneration int64
	Size           int64
	CRC32C         uint32
	MD5            []byte // nil for an appendable object, which has none

	ContentType, ContentEncoding, ContentDisposition string
	ContentLanguage, CacheControl, StorageClass      string
	Metadata                                         map[string]string

	Created, Updated time.Time
	CustomTime       time.Time // zero if unset
	// Finalized is when the object was finalized: when it was created,
	// for an object written at once; zero for an appendable object that
	// is not finalized yet.
	Finalized time.Time

	// Tenant is the tenant of the call that wrote the object, or "".
	Tenant string
}

// Object is a stored object with its content.
type Object struct {
	ObjectAttrs
	// Content is the object's bytes: a copy the caller owns.
	Content []byte
}

func (b *bucket) attrs(o *object) ObjectAttrs {
	a := ObjectAttrs{
		Bucket:             b.name,
		Name:               o.name,
		Generation:         o.generation,
		Metageneration:     o.metageneration,
		Size:               o.size,
		CRC32C:             o.crc32c,
		ContentType:        o.contentType,
		ContentEncoding:    o.contentEncoding,
		ContentDisposition: o.contentDisposition,
		ContentLanguage:    o.contentLanguage,
		CacheControl:       o.cacheControl,
		StorageClass:       o.storageClass,
		Metadata:           maps.Clone(o.metadata),
		Created:            time.UnixMicro(o.created).UTC(),
		Updated:            time.UnixMicro(o.updated).UTC(),
	}
	if o.hasMD5() {
		a.MD5 = slices.Clone(o.md5[:])
	}
	if t := o.finalizeTime(); t != 0 {
		a.Finalized = time.UnixMicro(t).UTC()
	}
	if o.customTime != 0 {
		a.CustomTime = time.UnixMicro(o.customTime).UTC()
	}
	if o.tenant != nil {
		a.Tenant = o.tenant.tenant
	}
	return a
}

// Object returns the live object name of bucket, with a copy of its
// content, straight from the store (no request is logged). For a missing
// bucket or object the error's gRPC code (status.Code) is codes.NotFound.
func (s *Server) Object(bucket, name string) (Object, error) {
	b, err := s.store.bucket(bucket)
	if err != nil {
		return Object{}, err
	}
	o, err := b.get(name, 0)
	if err != nil {
		return Object{}, err
	}
	return Object{ObjectAttrs: b.attrs(o), Content: o.bytes()}, nil
}

// ListObjects returns the attributes of the live objects of bucket whose
// names start with prefix, in name order, straight from the store. It lists
// them all at once: meant for tests, not for buckets of millions.
func (s *Server) ListObjects(bucket, prefix string) ([]ObjectAttrs, error) {
	b, err := s.store.bucket(bucket)
	if err != nil {
		return nil, err
	}
	objs := b.all(prefix)
	out := make([]ObjectAttrs, len(objs))
	for i, o := range objs {
		out[i] = b.attrs(o)
	}
	return out, nil
}

// PutObject stores o straight into the store, as a test's seed, and returns
// the stored attributes. It takes o.Bucket, o.Name, o.Content (copied), the
// content and cache headers, the storage class, the metadata, the custom
// time and the tenant; the store sets the generation, the times and the
// checksums. It replaces any live object of that name, checking the name
// and the bucket as a write would.
func (s *Server) PutObject(o Object) (ObjectAttrs, error) {
	b, err := s.store.bucket(o.Bucket)
	if err != nil {
		return ObjectAttrs{}, err
	}
	if err := checkObjectName(o.Name); err != nil {
		return ObjectAttrs{}, err
	}
	content := slices.Clone(o.Content)
	obj := &object{
		name:               o.Name,
		size:               int64(len(content)),
		crc32c:             crc32.Checksum(content, crc32c.Table),
		md5:                md5.Sum(content),
		contentType:        o.ContentType,
		contentEncoding:    o.ContentEncoding,
		contentDisposition: o.ContentDisposition,
		contentLanguage:    o.ContentLanguage,
		cacheControl:       o.CacheControl,
		storageClass:       o.StorageClass,
		metadata:           maps.Clone(o.Metadata),
	}
	if len(content) > 0 {
		obj.content = [][]byte{content}
	}
	if obj.storageClass == "" {
		obj.storageClass = defaultStorageClass
	}
	if !o.CustomTime.IsZero() {
		obj.customTime = o.CustomTime.UnixMicro()
	}
	stored, err := b.put(obj, nil, o.Tenant)
	if err != nil {
		return ObjectAttrs{}, err
	}
	return b.attrs(stored), nil
}

// Usage is what one tenant has stored: every object generation kept, by the
// tenant of the call that wrote it.
type Usage struct {
	Tenant  string
	Objects int64
	Bytes   int64
}

// Usage returns the objects and bytes stored per tenant, over every bucket,
// in tenant order. Tenants with nothing stored are left out.
func (s *Server) Usage() []Usage { return s.store.usageByTenant() }
