package store

import (
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/google/btree"
)

// Bucket is one bucket: a map of the live objects by name, for gets and
// overwrites, and an ordered index of every stored generation, for listing.
type Bucket struct {
	name       string
	resName    string // "projects/_/buckets/NAME"
	created    int64  // Unix microseconds
	versioning bool   // at creation; Attrs().Versioning since
	zonal      bool   // a zonal bucket: appendable objects only (CreateZonalBucket)
	store      *Store
	meta       bucketMeta // attributes, notification configs, IAM policy

	mu      sync.RWMutex
	deleted bool
	live    map[string]*Object   // nil on disk
	index   *btree.BTreeG[entry] // nil on disk
	usage   map[string]*usage    // by tenant
	owners  map[string]any       // on disk: the owners of appendable objects, by ownerKey
}

// Name is the bucket's name.
func (b *Bucket) Name() string { return b.name }

// ResName is the bucket's resource name, "projects/_/buckets/NAME".
func (b *Bucket) ResName() string { return b.resName }

// Created is when the bucket was created, in Unix microseconds.
func (b *Bucket) Created() int64 { return b.created }

// Zonal reports whether the bucket is zonal: it stores appendable objects
// only, as a GCS zonal (Rapid) bucket does.
func (b *Bucket) Zonal() bool { return b.zonal }

// ZonalLocation is the location the fake reports for a zonal bucket.
const ZonalLocation = "US-CENTRAL1-A"

// Location returns the bucket's location and location type as GCS
// reports them: a zone for a zonal bucket, else the "US" multi-region.
func (b *Bucket) Location() (location, locationType string) {
	if b.zonal {
		return ZonalLocation, "zone"
	}
	return "US", "multi-region"
}

// ErrZonal is the error for a write that is not appendable into the zonal
// bucket name, done with what (a method or API): InvalidArgument (HTTP
// 400), a request the bucket cannot take, so that it is never read as a
// failed precondition (HTTP 412), which says that an object exists or has
// another generation.
func ErrZonal(name, what string) *Error {
	return Errorf(KindInvalid, "bucket %q is a zonal bucket: it accepts only appendable writes (BidiWriteObject with write_object_spec.appendable), not %s", name, what)
}

// ErrUnfinalized is the error for a delete or overwrite (what) of the
// unfinalized appendable object o: it must be finalized first (a
// takeover can finalize it).
func ErrUnfinalized(o *Object, what string) *Error {
	return Errorf(KindFailedPrecondition, "object %q generation %d is an unfinalized appendable object: it cannot be %s until it is finalized (take it over with append_object_spec and finish_write)", o.name, o.generation, what)
}

// Versioning reports whether the bucket keeps noncurrent generations.
func (b *Bucket) Versioning() bool { return b.Attrs().Versioning }

// entry is one stored generation in a bucket's index, ordered by name, then
// generation.
type entry struct {
	name string
	gen  int64
	obj  *Object
}

func entryLess(a, b entry) bool {
	if a.name != b.name {
		return a.name < b.name
	}
	return a.gen < b.gen
}

// usageOf returns the usage record of tenant. b.mu must be held for writing.
func (b *Bucket) usageOf(tenant string) *usage {
	u := b.usage[tenant]
	if u == nil {
		u = &usage{tenant: tenant}
		b.usage[tenant] = u
	}
	return u
}

// forget removes o from the index and its tenant's usage. b.mu is held.
func (b *Bucket) forget(o *Object) {
	b.index.Delete(entry{name: o.name, gen: o.generation})
	o.tenant.objects--
	o.tenant.bytes -= o.size
}

// retire makes the live object o noncurrent, or forgets it in a bucket
// without versioning. b.mu is held.
func (b *Bucket) retire(o *Object, now int64) {
	if !b.versioningLocked() {
		b.forget(o)
		return
	}
	nc := *o
	nc.deleted = now
	b.index.ReplaceOrInsert(entry{name: o.name, gen: o.generation, obj: &nc})
}

// Put stores an object name with the attributes a and the content c,
// written by tenant, as the new live generation of its name if cond holds
// against the live object, and returns it. The store keeps c's parts and
// a's metadata map and Extra: the caller must not change them afterwards.
func (b *Bucket) Put(name string, a Attrs, c Content, cond *Conditions, tenant string) (*Object, error) {
	return b.put(name, a, c, cond, tenant, nil)
}

// sessionWrite is the record of a resumable session to write with the
// object it stores, on disk: rec gets the object's generation.
type sessionWrite struct {
	id  string
	rec func(gen int64) []byte
}

// PutSession is Put for the resumable session id. On disk, the session's
// record becomes rec(gen), gen being the stored object's generation, in
// the same synced write as the object: a restart finds the session
// finalized if and only if it finds the object (see SaveSession).
func (b *Bucket) PutSession(name string, a Attrs, c Content, cond *Conditions, tenant, id string, rec func(gen int64) []byte) (*Object, error) {
	return b.put(name, a, c, cond, tenant, &sessionWrite{id, rec})
}

func (b *Bucket) put(name string, a Attrs, c Content, cond *Conditions, tenant string, sess *sessionWrite) (*Object, error) {
	if c.files != nil && b.store.disk == nil {
		return nil, Errorf(KindInternal, "store: content in files is for a store on disk")
	}
	o := newObject(name, a, c)
	o.md5, o.hasMD5 = c.MD5, c.HasMD5
	if d := b.store.disk; d != nil {
		if err := d.storeContent(o, &c); err != nil {
			return nil, err
		}
		stored, err := b.diskAdd(o, cond, tenant, sess)
		if err != nil && o.blob != "" {
			os.Remove(o.blob)
		}
		return stored, err
	}
	return b.add(o, cond, tenant)
}

// PutAppendable stores the empty, unfinalized appendable object name with
// the attributes a, written by owner (its writer state, which
// replaceAppendable names), if cond holds against the live object.
func (b *Bucket) PutAppendable(name string, a Attrs, owner any, cond *Conditions, tenant string) (*Object, error) {
	o := newObject(name, a, Content{})
	o.app = &appendState{owner: owner}
	return b.add(o, cond, tenant)
}

// newObject returns an object to store, before its generation and times
// are set.
func newObject(name string, a Attrs, c Content) *Object {
	if a.StorageClass == "" {
		a.StorageClass = DefaultStorageClass
	}
	return &Object{name: name, attrs: a, size: c.Size, crc32c: c.CRC32C, content: slices.Clip(c.Parts)}
}

// add stores o, whose content, size and checksums are set, as the new live
// generation of its name if cond holds against the live object. It sets o's
// generation, metageneration and times, and returns o.
func (b *Bucket) add(o *Object, cond *Conditions, tenant string) (*Object, error) {
	if b.store.disk != nil {
		return b.diskAdd(o, cond, tenant, nil)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.takesLocked(o); err != nil {
		return nil, err
	}
	old := b.live[o.name]
	now, err := b.replacesLocked(o, old, cond)
	if err != nil {
		return nil, err
	}
	if old != nil {
		b.retire(old, now)
	}
	o.tenant = b.usageOf(tenant)
	o.tenant.objects++
	o.tenant.bytes += o.size
	b.live[o.name] = o
	b.index.ReplaceOrInsert(entry{name: o.name, gen: o.generation, obj: o})
	return o, nil
}

// replacesLocked checks that o may replace old, the live object of its
// name (nil: none), as cond says: an unfinalized old is replaced only by
// an appendable write, as GCS lets it. It then makes o a new generation
// and returns the time it stamped. b.mu is held.
func (b *Bucket) replacesLocked(o, old *Object, cond *Conditions) (now int64, err error) {
	if err := cond.Check(old); err != nil {
		return 0, err
	}
	if old.Unfinalized() && o.app == nil {
		return 0, ErrUnfinalized(old, "overwritten by a write that is not appendable")
	}
	now = NowMicro()
	o.generation = b.store.nextGeneration(now)
	o.metageneration = 1
	o.created, o.updated = now, now
	return now, nil
}

// ReplaceAppendable stores a copy of the live appendable object name,
// generation gen, written by owner, with the content c, finalized if final,
// and returns it; false if that object is no longer the live generation of
// its name, or another writer took it over.
func (b *Bucket) ReplaceAppendable(name string, gen int64, owner any, c Content, final bool) (*Object, bool) {
	if b.store.disk != nil {
		return b.diskReplaceAppendable(name, gen, owner, c, final)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	o := b.live[name]
	if b.deleted || o == nil || o.generation != gen || o.app == nil || o.app.owner != owner {
		return nil, false
	}
	n := *o
	n.size, n.crc32c, n.content = c.Size, c.CRC32C, slices.Clip(c.Parts)
	n.updated = max(NowMicro(), o.updated)
	if final {
		n.app = &appendState{owner: owner, finalized: n.updated}
	}
	n.tenant.bytes += n.size - o.size
	b.live[n.name] = &n
	b.index.ReplaceOrInsert(entry{name: n.name, gen: n.generation, obj: &n})
	return &n, true
}

// Get returns the live object name, or its generation gen if gen != 0.
func (b *Bucket) Get(name string, gen int64) (*Object, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.getLocked(name, gen)
}

func (b *Bucket) getLocked(name string, gen int64) (*Object, error) {
	if b.store.disk != nil {
		o, err := b.diskGet(name, gen)
		if o == nil && err == nil {
			err = ErrObjectNotFound(b.name, name, gen)
		}
		return o, err
	}
	if o := b.live[name]; o != nil && (gen == 0 || gen == o.generation) {
		return o, nil
	}
	if gen != 0 {
		if e, ok := b.index.Get(entry{name: name, gen: gen}); ok {
			return e.obj, nil
		}
	}
	return nil, ErrObjectNotFound(b.name, name, gen)
}

// Remove deletes the live object name, or its generation gen if gen != 0, if
// cond holds against it. Deleting the live object of a versioned bucket
// keeps it as a noncurrent version; deleting a named generation removes it
// for good.
func (b *Bucket) Remove(name string, gen int64, cond *Conditions) error {
	if b.store.disk != nil {
		return b.diskRemove(name, gen, cond)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	o, err := b.checkedLocked(name, gen, cond)
	if err != nil {
		return err
	}
	if o.Unfinalized() {
		return ErrUnfinalized(o, "deleted")
	}
	if o.Live() {
		delete(b.live, name)
		if gen == 0 {
			b.retire(o, NowMicro())
			return nil
		}
	}
	b.forget(o)
	return nil
}

// Update changes the attributes of the live object name (or of generation
// gen) with edit, if cond holds, and returns the new object: a copy with
// metageneration one higher and a new update time. edit gets a copy of the
// attributes, with its own metadata map, and may change them.
func (b *Bucket) Update(name string, gen int64, cond *Conditions, edit func(*Attrs) error) (*Object, error) {
	if b.store.disk != nil {
		return b.diskUpdate(name, gen, cond, edit)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	o, err := b.checkedLocked(name, gen, cond)
	if err != nil {
		return nil, err
	}
	c := o.copyMeta()
	if err := edit(&c.attrs); err != nil {
		return nil, err
	}
	c.metageneration++
	c.updated = max(NowMicro(), o.updated)
	if o.Live() {
		b.live[name] = c
	}
	b.index.ReplaceOrInsert(entry{name: name, gen: c.generation, obj: c})
	return c, nil
}

// All returns every live object whose name starts with prefix, in name
// order.
func (b *Bucket) All(prefix string) []*Object {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []*Object
	b.ascend(prefix, 0, func(o *Object) bool {
		if !strings.HasPrefix(o.name, prefix) {
			return false
		}
		if o.Live() {
			out = append(out, o)
		}
		return true
	})
	return out
}

// ascend calls fn with each stored generation from (name, gen) on, in
// order, until it returns false. b.mu is held.
func (b *Bucket) ascend(name string, gen int64, fn func(*Object) bool) error {
	if b.store.disk != nil {
		return b.diskAscend(name, gen, fn)
	}
	b.index.AscendGreaterOrEqual(entry{name: name, gen: gen}, func(e entry) bool { return fn(e.obj) })
	return nil
}

// takesLocked reports whether b takes the write of o (it exists, and a
// zonal bucket takes appendable objects only), and gives an object of a
// zonal bucket its storage class. b.mu is held.
func (b *Bucket) takesLocked(o *Object) error {
	if b.deleted {
		return ErrBucketNotFound(b.name)
	}
	if b.zonal && o.app == nil {
		return ErrZonal(b.name, "a write that is not appendable")
	}
	if b.zonal {
		o.attrs.StorageClass = RapidStorageClass
	}
	return nil
}

// checkedLocked returns generation gen of object name (0: the live one)
// if cond holds for it. b.mu is held.
func (b *Bucket) checkedLocked(name string, gen int64, cond *Conditions) (*Object, error) {
	o, err := b.getLocked(name, gen)
	if err != nil {
		return nil, err
	}
	if err := cond.Check(o); err != nil {
		return nil, err
	}
	return o, nil
}
