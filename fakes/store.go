package fakes

import (
	"encoding/base64"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"
)

// store is the fake's object store, shared by the gRPC and JSON fronts. Its
// own lock guards only the set of buckets; each bucket has its own lock, held
// for map and index updates only: content is built, checksummed and copied
// before a write takes the lock, and read after a read released it.
type store struct {
	mu      sync.RWMutex
	buckets map[string]*bucket

	lastGen atomic.Int64
}

func newStore() *store {
	return &store{buckets: make(map[string]*bucket)}
}

// bucket is one bucket: a map of the live objects by name, for gets and
// overwrites, and an ordered index of every stored generation, for listing.
type bucket struct {
	name       string
	resName    string // "projects/_/buckets/NAME"
	created    int64  // Unix microseconds
	versioning bool
	store      *store

	mu      sync.RWMutex
	deleted bool
	live    map[string]*object
	index   *btree.BTreeG[entry]
	usage   map[string]*usage // by tenant
}

// entry is one stored generation in a bucket's index, ordered by name, then
// generation.
type entry struct {
	name string
	gen  int64
	obj  *object
}

func entryLess(a, b entry) bool {
	if a.name != b.name {
		return a.name < b.name
	}
	return a.gen < b.gen
}

// usage counts what one tenant stored in a bucket: every generation kept,
// by the tenant of the call that wrote it. Guarded by the bucket's lock.
type usage struct {
	tenant         string
	objects, bytes int64
}

// object is one stored generation of an object. Once it is in the store an
// object is never modified: a metadata update, or the overwrite or delete of
// the live object in a versioned bucket, stores a changed copy that shares
// the content. So readers keep a *object without holding any lock.
type object struct {
	name           string
	generation     int64
	metageneration int64
	size           int64
	crc32c         uint32
	md5            [md5Len]byte

	created, updated int64 // Unix microseconds
	deleted          int64 // when a noncurrent version stopped being live; 0 if live
	customTime       int64 // Unix microseconds, 0 if unset

	contentType, contentEncoding, contentDisposition string
	contentLanguage, cacheControl, storageClass      string
	metadata                                         map[string]string
	extra                                            *objectExtra // nil for most objects
	app                                              *appendState // nil unless written appendable

	// content is the object's bytes in parts, as received: never written
	// after the object is stored.
	content [][]byte
	tenant  *usage
}

const md5Len = 16

// live reports whether o is its name's live generation.
func (o *object) live() bool { return o.deleted == 0 }

// copyMeta returns a shallow copy of o for a metadata change: same content,
// its own metadata map.
func (o *object) copyMeta() *object {
	c := *o
	c.metadata = maps.Clone(o.metadata)
	return &c
}

// part returns content[off:off+n] without copying when those bytes lie in one
// part, else nil.
func (o *object) part(off, n int64) []byte {
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

// read copies content from offset off into b and returns the count.
func (o *object) read(b []byte, off int64) int {
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

// writeRange writes content[start:end] to w.
func (o *object) writeRange(w io.Writer, start, end int64) error {
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

// bytes returns a copy of the whole content.
func (o *object) bytes() []byte {
	b := make([]byte, o.size)
	o.read(b, 0)
	return b
}

// nextGeneration returns a new generation number: the time in microseconds,
// as GCS uses, made strictly increasing across the store.
func (s *store) nextGeneration(now int64) int64 {
	for {
		last := s.lastGen.Load()
		g := max(now, last+1)
		if s.lastGen.CompareAndSwap(last, g) {
			return g
		}
	}
}

// nowMicro is the store's clock.
func nowMicro() int64 { return time.Now().UnixMicro() }

// bucket returns the bucket name.
func (s *store) bucket(name string) (*bucket, error) {
	s.mu.RLock()
	b := s.buckets[name]
	s.mu.RUnlock()
	if b == nil {
		return nil, errBucketNotFound(name)
	}
	return b, nil
}

// createBucket creates bucket name. With exist set, a bucket that already
// exists is not an error.
func (s *store) createBucket(name string, versioning, exist bool) (*bucket, error) {
	if err := checkBucketName(name); err != nil {
		return nil, newError(kindInvalid, "%v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.buckets[name]; b != nil {
		if exist {
			return b, nil
		}
		return nil, newError(kindConflict, "bucket %q already exists", name)
	}
	b := &bucket{
		name:       name,
		resName:    bucketPrefix + name,
		created:    nowMicro(),
		versioning: versioning,
		store:      s,
		live:       make(map[string]*object),
		index:      btree.NewG(32, entryLess),
		usage:      make(map[string]*usage),
	}
	s.buckets[name] = b
	return b, nil
}

// deleteBucket deletes an empty bucket.
func (s *store) deleteBucket(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[name]
	if b == nil {
		return errBucketNotFound(name)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.index.Len() > 0 {
		return newError(kindConflict, "bucket %q is not empty: it holds %d object generations", name, b.index.Len())
	}
	b.deleted = true
	delete(s.buckets, name)
	return nil
}

// listBuckets returns the buckets whose names start with prefix and sort
// after after, in name order, at most n.
func (s *store) listBuckets(prefix, after string, n int) (out []*bucket, more bool) {
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

// conditions are a request's generation and metageneration preconditions.
type conditions struct {
	genMatch, genNotMatch, metaMatch, metaNotMatch *int64
}

// check evaluates the conditions against o, the live object or the
// generation a request names (nil: none). As GCS documents, a *NotMatch
// condition fails when there is no object.
func (c *conditions) check(o *object) error {
	if c == nil {
		return nil
	}
	var gen, meta int64
	if o != nil {
		gen, meta = o.generation, o.metageneration
	}
	switch {
	case c.genMatch != nil && *c.genMatch != gen:
		if *c.genMatch == 0 {
			return newPrecondition(false, "if_generation_match=0 but the object exists (generation %d)", gen)
		}
		if o == nil {
			return newPrecondition(false, "if_generation_match=%d but the object does not exist", *c.genMatch)
		}
		return newPrecondition(false, "if_generation_match=%d, live generation is %d", *c.genMatch, gen)
	case c.metaMatch != nil && (o == nil || *c.metaMatch != meta):
		if o == nil {
			return newPrecondition(false, "if_metageneration_match=%d but the object does not exist", *c.metaMatch)
		}
		return newPrecondition(false, "if_metageneration_match=%d, metageneration is %d", *c.metaMatch, meta)
	case c.genNotMatch != nil && (o == nil || *c.genNotMatch == gen):
		if o == nil {
			return newPrecondition(true, "if_generation_not_match=%d but the object does not exist", *c.genNotMatch)
		}
		return newPrecondition(true, "if_generation_not_match=%d is the generation", gen)
	case c.metaNotMatch != nil && (o == nil || *c.metaNotMatch == meta):
		if o == nil {
			return newPrecondition(true, "if_metageneration_not_match=%d but the object does not exist", *c.metaNotMatch)
		}
		return newPrecondition(true, "if_metageneration_not_match=%d is the metageneration", meta)
	}
	return nil
}

// usageOf returns the usage record of tenant. b.mu must be held for writing.
func (b *bucket) usageOf(tenant string) *usage {
	u := b.usage[tenant]
	if u == nil {
		u = &usage{tenant: tenant}
		b.usage[tenant] = u
	}
	return u
}

// forget removes o from the index and its tenant's usage. b.mu is held.
func (b *bucket) forget(o *object) {
	b.index.Delete(entry{name: o.name, gen: o.generation})
	o.tenant.objects--
	o.tenant.bytes -= o.size
}

// retire makes the live object o noncurrent, or forgets it in a bucket
// without versioning. b.mu is held.
func (b *bucket) retire(o *object, now int64) {
	if !b.versioning {
		b.forget(o)
		return
	}
	nc := *o
	nc.deleted = now
	b.index.ReplaceOrInsert(entry{name: o.name, gen: o.generation, obj: &nc})
}

// put stores o, whose content, size and checksums are set, as the new live
// generation of its name if cond holds against the live object. It sets o's
// generation, metageneration and times, and returns o; the caller must not
// change o afterwards.
func (b *bucket) put(o *object, cond *conditions, tenant string) (*object, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.deleted {
		return nil, errBucketNotFound(b.name)
	}
	old := b.live[o.name]
	if err := cond.check(old); err != nil {
		return nil, err
	}
	now := nowMicro()
	o.generation = b.store.nextGeneration(now)
	o.metageneration = 1
	o.created, o.updated = now, now
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

// replaceAppendable stores a copy of the live object of the appendable
// write up with the bytes up holds, finalized if final, and returns it;
// false if that object is no longer the live generation of its name. up.mu
// is held.
func (b *bucket) replaceAppendable(up *upload, final bool) (*object, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	o := b.live[up.object]
	if b.deleted || o == nil || o.generation != up.gen || o.app == nil || o.app.up != up {
		return nil, false
	}
	c := *o
	c.size, c.crc32c, c.content = up.size, up.crc, slices.Clip(up.chunks)
	c.updated = max(nowMicro(), o.updated)
	if final {
		c.app = &appendState{up: up, finalized: c.updated}
	}
	c.tenant.bytes += c.size - o.size
	b.live[c.name] = &c
	b.index.ReplaceOrInsert(entry{name: c.name, gen: c.generation, obj: &c})
	return &c, true
}

// get returns the live object name, or its generation gen if gen != 0.
func (b *bucket) get(name string, gen int64) (*object, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.getLocked(name, gen)
}

func (b *bucket) getLocked(name string, gen int64) (*object, error) {
	if o := b.live[name]; o != nil && (gen == 0 || gen == o.generation) {
		return o, nil
	}
	if gen != 0 {
		if e, ok := b.index.Get(entry{name: name, gen: gen}); ok {
			return e.obj, nil
		}
	}
	return nil, errObjectNotFound(b.name, name, gen)
}

// remove deletes the live object name, or its generation gen if gen != 0, if
// cond holds against it. Deleting the live object of a versioned bucket
// keeps it as a noncurrent version; deleting a named generation removes it
// for good.
func (b *bucket) remove(name string, gen int64, cond *conditions) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, err := b.getLocked(name, gen)
	if err != nil {
		return err
	}
	if err := cond.check(o); err != nil {
		return err
	}
	if o.live() {
		delete(b.live, name)
		if gen == 0 {
			b.retire(o, nowMicro())
			return nil
		}
	}
	b.forget(o)
	return nil
}

// update changes the metadata of the live object name (or of generation gen)
// with edit, if cond holds, and returns the new object: a copy with
// metageneration one higher and a new update time.
func (b *bucket) update(name string, gen int64, cond *conditions, edit func(*object) error) (*object, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, err := b.getLocked(name, gen)
	if err != nil {
		return nil, err
	}
	if err := cond.check(o); err != nil {
		return nil, err
	}
	c := o.copyMeta()
	if err := edit(c); err != nil {
		return nil, err
	}
	c.metageneration++
	c.updated = max(nowMicro(), o.updated)
	if o.live() {
		b.live[name] = c
	}
	b.index.ReplaceOrInsert(entry{name: name, gen: c.generation, obj: c})
	return c, nil
}

// listQuery is a list request, the same for both APIs.
type listQuery struct {
	prefix, delimiter        string
	startOffset, endOffset   string // names in [startOffset, endOffset); "" means unbounded
	includeTrailingDelimiter bool
	versions                 bool
	pageSize                 int
	token                    string // a page token from an earlier page
}

// listPage is one page of a listing.
type listPage struct {
	objects  []*object
	prefixes []string
	next     string // the next page's token; "" on the last page
}

// pageToken is where a listing resumes: at the entry (name, gen), included.
// It is opaque to clients: base64url of "GEN:NAME".
func pageToken(name string, gen int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(gen, 10) + ":" + name))
}

func parsePageToken(t string) (string, int64, bool) {
	b, err := base64.RawURLEncoding.DecodeString(t)
	if err != nil {
		return "", 0, false
	}
	g, name, ok := strings.Cut(string(b), ":")
	gen, err := strconv.ParseInt(g, 10, 64)
	if !ok || err != nil || gen < 0 {
		return "", 0, false
	}
	return name, gen, true
}

// prefixEnd returns the smallest string greater than every string that
// starts with p, or "" if there is none.
func prefixEnd(p string) string {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}

// list returns one page of the bucket's objects in name order (then
// generation), with the names that the delimiter rolls up reported once as
// prefixes. Objects and prefixes count together towards the page size. The
// cost is that of the entries returned, plus one index seek per prefix: it
// does not grow with the size of the bucket.
func (b *bucket) list(q *listQuery) (*listPage, error) {
	start := max(q.prefix, q.startOffset)
	var startGen int64
	if q.token != "" {
		name, gen, ok := parsePageToken(q.token)
		if !ok {
			return nil, newError(kindInvalid, "page token %q is not one this server issued", q.token)
		}
		if name > start || name == start && gen > startGen {
			start, startGen = name, gen
		}
	}
	page := &listPage{}
	entries := 0
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.deleted {
		return nil, errBucketNotFound(b.name)
	}
	for {
		// Each pass walks the index from (start, startGen) until the page
		// is full, the names leave the range, or the delimiter rolls up a
		// prefix, after which the next pass seeks past that prefix.
		var (
			skipTo string
			done   = true
		)
		b.index.AscendGreaterOrEqual(entry{name: start, gen: startGen}, func(e entry) bool {
			o := e.obj
			if !strings.HasPrefix(o.name, q.prefix) || q.endOffset != "" && o.name >= q.endOffset {
				return false
			}
			if !q.versions && !o.live() {
				return true
			}
			if q.delimiter != "" {
				if i := strings.Index(o.name[len(q.prefix):], q.delimiter); i >= 0 {
					p := o.name[:len(q.prefix)+i+len(q.delimiter)]
					if entries == q.pageSize {
						page.next = pageToken(o.name, o.generation)
						return false
					}
					entries++
					page.prefixes = append(page.prefixes, p)
					if q.includeTrailingDelimiter && o.name == p {
						// The object named like the prefix is listed too;
						// with versions, all its generations are.
						b.index.AscendGreaterOrEqual(e, func(e2 entry) bool {
							if e2.name != p {
								return false
							}
							if q.versions || e2.obj.live() {
								page.objects = append(page.objects, e2.obj)
							}
							return true
						})
					}
					skipTo, done = prefixEnd(p), false
					return false
				}
			}
			if entries == q.pageSize {
				page.next = pageToken(o.name, o.generation)
				return false
			}
			entries++
			page.objects = append(page.objects, o)
			return true
		})
		if done || skipTo == "" {
			return page, nil
		}
		start, startGen = skipTo, 0
	}
}

// all returns every live object whose name starts with prefix, in name
// order.
func (b *bucket) all(prefix string) []*object {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []*object
	b.index.AscendGreaterOrEqual(entry{name: prefix}, func(e entry) bool {
		if !strings.HasPrefix(e.name, prefix) {
			return false
		}
		if e.obj.live() {
			out = append(out, e.obj)
		}
		return true
	})
	return out
}

// usageByTenant returns the store's usage summed over buckets, by tenant,
// in tenant order.
func (s *store) usageByTenant() []Usage {
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
