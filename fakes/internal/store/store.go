package store

import (
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/btree"
)

// Store is the fake's object store, shared by the gRPC and JSON fronts. Its
// own lock guards only the set of buckets; each bucket has its own lock, held
// for map and index updates only: content is built, checksummed and copied
// before a write takes the lock, and read after a read released it.
type Store struct {
	mu      sync.RWMutex
	buckets map[string]*Bucket

	lastGen atomic.Int64
	hmac    hmacKeys // the project's HMAC keys
	disk    *disk    // nil: a store in memory (New); else Open's
}

// New returns an empty store in memory.
func New() *Store {
	return &Store{buckets: make(map[string]*Bucket)}
}

// usage counts what one tenant stored in a bucket: every generation kept,
// by the tenant of the call that wrote it. Guarded by the bucket's lock.
type usage struct {
	tenant         string
	objects, bytes int64
}

// nextGeneration returns a new generation number: the time in microseconds,
// as GCS uses, made strictly increasing across the store.
func (s *Store) nextGeneration(now int64) int64 {
	for {
		last := s.lastGen.Load()
		g := max(now, last+1)
		if s.lastGen.CompareAndSwap(last, g) {
			return g
		}
	}
}

// NowMicro is the store's clock.
func NowMicro() int64 { return time.Now().UnixMicro() }

// Bucket returns the bucket name.
func (s *Store) Bucket(name string) (*Bucket, error) {
	s.mu.RLock()
	b := s.buckets[name]
	s.mu.RUnlock()
	if b == nil {
		return nil, ErrBucketNotFound(name)
	}
	return b, nil
}

// CreateBucket creates bucket name. With exist set, a bucket that already
// exists is not an error.
func (s *Store) CreateBucket(name string, versioning, exist bool) (*Bucket, error) {
	return s.createBucket(name, versioning, exist, nil, false)
}

// CreateZonalBucket creates the zonal bucket name (see Bucket.Zonal), of
// storage class RAPID. With exist set, a zonal bucket that already exists
// is not an error; a bucket of that name that is not zonal is.
func (s *Store) CreateZonalBucket(name string, exist bool) (*Bucket, error) {
	b, err := s.createBucket(name, false, exist, &BucketAttrs{StorageClass: RapidStorageClass, ACL: DefaultBucketACL(), DefaultObjectACL: DefaultObjectACL()}, true)
	if err == nil && !b.zonal {
		return nil, Errorf(KindConflict, "bucket %q already exists and is not zonal", name)
	}
	return b, err
}

// CreateBucketAttrs creates bucket name with the attributes a (its
// metageneration and update time are set here), as CreateBucket does.
func (s *Store) CreateBucketAttrs(name string, a BucketAttrs, exist bool) (*Bucket, error) {
	return s.createBucket(name, a.Versioning, exist, &a, false)
}

// createBucket creates bucket name, with the attributes a if not nil,
// zonal if zonal.
func (s *Store) createBucket(name string, versioning, exist bool, a *BucketAttrs, zonal bool) (*Bucket, error) {
	if err := CheckBucketName(name); err != nil {
		return nil, Errorf(KindInvalid, "%v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.buckets[name]; b != nil {
		if exist {
			return b, nil
		}
		return nil, Errorf(KindConflict, "bucket %q already exists", name)
	}
	b := s.newBucket(name, versioning, zonal, NowMicro())
	if a != nil {
		a = a.Clone()
		a.Metageneration, a.Updated = 1, b.created
		if a.StorageClass == "" {
			a.StorageClass = DefaultStorageClass
		}
		b.meta.attrs.Store(a)
	}
	if err := b.saveMeta(); err != nil {
		return nil, err
	}
	s.buckets[name] = b
	return b, nil
}

// newBucket returns the bucket name, empty.
func (s *Store) newBucket(name string, versioning, zonal bool, created int64) *Bucket {
	b := &Bucket{
		name:       name,
		resName:    "projects/_/buckets/" + name,
		created:    created,
		versioning: versioning,
		zonal:      zonal,
		store:      s,
		usage:      make(map[string]*usage),
	}
	if s.disk == nil {
		b.live = make(map[string]*Object)
		b.index = btree.NewG(32, entryLess)
	} else {
		b.owners = make(map[string]any)
	}
	return b
}

// DeleteBucket deletes an empty bucket.
func (s *Store) DeleteBucket(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[name]
	if b == nil {
		return ErrBucketNotFound(name)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if d := s.disk; d != nil {
		empty, err := b.diskEmpty()
		if err != nil {
			return err
		}
		if !empty {
			return Errorf(KindConflict, "bucket %q is not empty", name)
		}
		batch := d.db.NewBatch()
		batch.Delete(bucketKey(name), nil)
		for t := range b.usage {
			batch.Delete(usageKey(name, t), nil)
		}
		if err := d.enter(); err != nil {
			return err
		}
		err = batch.Commit(pebble.Sync)
		d.exit()
		if err != nil {
			return errDisk(err)
		}
	} else if b.index.Len() > 0 {
		return Errorf(KindConflict, "bucket %q is not empty: it holds %d object generations", name, b.index.Len())
	}
	b.deleted = true
	delete(s.buckets, name)
	return nil
}

// ListBuckets returns the buckets whose names start with prefix and sort
// after after, in name order, at most n.
func (s *Store) ListBuckets(prefix, after string, n int) (out []*Bucket, more bool) {
	s.mu.RLock()
	for name, b := range s.buckets {
		if strings.HasPrefix(name, prefix) && name > after {
			out = append(out, b)
		}
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	if len(out) > n {
		return out[:n], true
	}
	return out, false
}

// Usage is what one tenant has stored: every object generation kept, by the
// tenant of the call that wrote it.
type Usage struct {
	Tenant  string
	Objects int64
	Bytes   int64
}

// UsageByTenant returns the store's usage summed over buckets, by tenant,
// in tenant order.
func (s *Store) UsageByTenant() []Usage {
	s.mu.RLock()
	bs := slices.Collect(maps.Values(s.buckets))
	s.mu.RUnlock()
	sum := map[string]*Usage{}
	for _, b := range bs {
		b.mu.RLock()
		for t, u := range b.usage {
			if u.objects == 0 && u.bytes == 0 {
				continue
			}
			if sum[t] == nil {
				sum[t] = &Usage{Tenant: t}
			}
			sum[t].Objects += u.objects
			sum[t].Bytes += u.bytes
		}
		b.mu.RUnlock()
	}
	out := make([]Usage, 0, len(sum))
	for _, u := range sum {
		out = append(out, *u)
	}
	slices.SortFunc(out, func(a, b Usage) int { return strings.Compare(a.Tenant, b.Tenant) })
	return out
}
