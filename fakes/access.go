package fakes

import (
	"crypto/md5"
	"hash/crc32"
	"maps"
	"slices"
	"time"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/store"
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

// attrs returns the attributes of o, an object of b.
func attrs(b *store.Bucket, o *store.Object) ObjectAttrs {
	oa := o.Attrs()
	a := ObjectAttrs{
		Bucket:             b.Name(),
		Name:               o.Name(),
		Generation:         o.Generation(),
		Metageneration:     o.Metageneration(),
		Size:               o.Size(),
		CRC32C:             o.CRC32C(),
		ContentType:        oa.ContentType,
		ContentEncoding:    oa.ContentEncoding,
		ContentDisposition: oa.ContentDisposition,
		ContentLanguage:    oa.ContentLanguage,
		CacheControl:       oa.CacheControl,
		StorageClass:       oa.StorageClass,
		Metadata:           maps.Clone(oa.Metadata),
		Tenant:             o.Tenant(),
		Created:            time.UnixMicro(o.Created()).UTC(),
		Updated:            time.UnixMicro(o.Updated()).UTC(),
	}
	if o.HasMD5() {
		a.MD5 = slices.Clone(o.MD5())
	}
	if t := o.FinalizeTime(); t != 0 {
		a.Finalized = time.UnixMicro(t).UTC()
	}
	if oa.CustomTime != 0 {
		a.CustomTime = time.UnixMicro(oa.CustomTime).UTC()
	}
	return a
}

// Object returns the live object name of bucket, with a copy of its
// content, straight from the store (no request is logged). For a missing
// bucket or object the error's gRPC code (status.Code) is codes.NotFound.
func (s *Server) Object(bucket, name string) (Object, error) {
	b, err := s.core.Store.Bucket(bucket)
	if err != nil {
		return Object{}, err
	}
	o, err := b.Get(name, 0)
	if err != nil {
		return Object{}, err
	}
	return Object{ObjectAttrs: attrs(b, o), Content: o.Bytes()}, nil
}

// ListObjects returns the attributes of the live objects of bucket whose
// names start with prefix, in name order, straight from the store. It lists
// them all at once: meant for tests, not for buckets of millions.
func (s *Server) ListObjects(bucket, prefix string) ([]ObjectAttrs, error) {
	b, err := s.core.Store.Bucket(bucket)
	if err != nil {
		return nil, err
	}
	objs := b.All(prefix)
	out := make([]ObjectAttrs, len(objs))
	for i, o := range objs {
		out[i] = attrs(b, o)
	}
	return out, nil
}

// PutObject stores o straight into the store, as a test's seed, and returns
// the stored attributes. It takes o.Bucket, o.Name, o.Content (copied), the
// content and cache headers, the storage class, the metadata, the custom
// time and the tenant; the store sets the generation, the times and the
// checksums. It replaces any live object of that name, checking the name
// and the bucket as a write would: like any write that is not appendable,
// it fails in a zonal bucket ([WithZonalBucket]) and over an unfinalized
// appendable object.
func (s *Server) PutObject(o Object) (ObjectAttrs, error) {
	b, err := s.core.Store.Bucket(o.Bucket)
	if err != nil {
		return ObjectAttrs{}, err
	}
	if err := api.CheckObjectName(o.Name); err != nil {
		return ObjectAttrs{}, err
	}
	content := slices.Clone(o.Content)
	sum := md5.Sum(content)
	c := store.Content{Size: int64(len(content)), CRC32C: crc32.Checksum(content, crc32c.Table), MD5: sum, HasMD5: true}
	if len(content) > 0 {
		c.Parts = [][]byte{content}
	}
	a := store.Attrs{
		ContentType:        o.ContentType,
		ContentEncoding:    o.ContentEncoding,
		ContentDisposition: o.ContentDisposition,
		ContentLanguage:    o.ContentLanguage,
		CacheControl:       o.CacheControl,
		StorageClass:       o.StorageClass,
		Metadata:           maps.Clone(o.Metadata),
	}
	if !o.CustomTime.IsZero() {
		a.CustomTime = o.CustomTime.UnixMicro()
	}
	stored, err := b.Put(o.Name, a, c, nil, o.Tenant)
	if err != nil {
		return ObjectAttrs{}, err
	}
	return attrs(b, stored), nil
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
func (s *Server) Usage() []Usage {
	us := s.core.Store.UsageByTenant()
	out := make([]Usage, len(us))
	for i, u := range us {
		out[i] = Usage(u)
	}
	return out
}
