package store

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
)

// A store on disk (Open) keeps everything it is told in a directory: the
// buckets with their attributes, notification configs and IAM policies,
// every object generation with its metadata and content, the per-tenant
// usage, the HMAC keys and the last generation handed out, in a Pebble
// database under DIR/db, and the content of objects larger than InlineMax
// (and of appendable objects) in files under DIR/blobs. No object is kept
// in memory: a get is one Pebble seek, a listing a Pebble range scan, so
// that both cost the same whatever the number of objects, and the memory
// of the process does not grow with it.
//
// A write is acknowledged (its method returns) only once it is synced:
// a blob file is written and fsynced (and its directory with it) before
// the Pebble batch that points to it is committed with pebble.Sync. The
// batch is applied under the bucket's lock, so writes to a bucket apply
// in order, and the lock is released before the WAL sync is waited for,
// so that the syncs of concurrent writes are grouped (Pebble's group
// commit). A write is visible to readers once applied, a few milliseconds
// before it is synced: a read may see a write that a crash at that moment
// loses, but no writer is told its write succeeded before it is synced,
// and the WAL is ordered, so that a synced write never depends on one
// that is lost.
//
// Pebble keys (bucket names hold neither NUL nor 0xff; object names are
// escaped so that the key order is the name order, then the generation):
//
//	"B" bucket                      the bucket's record (bucketRec, JSON)
//	"O" bucket 0x00 name' gen       an object generation (objRec); the live
//	                                generation's gen is liveGen
//	"U" bucket 0x00 tenant          a tenant's usage in the bucket
//	"H" accessID                    an HMAC key
//	"G"                             the last generation handed out
//	"S" id                          an open resumable session (opaque to the store)
//
// where name' is the object name with each 0x00 byte written 0x00 0xff,
// then 0x00 0x01, and gen is 8 bytes big-endian. The live generation of a
// name is kept at gen liveGen (its record holds its generation): it is the
// name's highest generation, so the key order is the listing order still,
// and a get of the live object is one point lookup, which the tables'
// Bloom filters answer without reading the tables that do not hold the key.
// So a get costs the same with ten million objects as with a thousand.

// liveGen is the generation in the key of a live object.
const liveGen = math.MaxInt64

// InlineMax is the largest content a store on disk keeps in the object's
// Pebble record; larger content lives in a file of its own.
const InlineMax = 64 << 10

type disk struct {
	db    *pebble.DB
	dir   string
	blobs string // DIR/blobs

	// Every use of db counts itself in inflight (enter, exit), so that
	// Close waits for the uses in flight and later ones fail: Pebble
	// panics on a closed database.
	closed   atomic.Bool
	inflight atomic.Int64

	// The files of deleted content are removed blobGrace after the
	// delete, so that a read that got the object before goes on.
	dropMu  sync.Mutex
	dropped map[string]*time.Timer
}

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

var errClosed = errors.New("the store is closed")

// enter starts a use of the database; exit ends it.
func (d *disk) enter() error {
	d.inflight.Add(1)
	if d.closed.Load() {
		d.inflight.Add(-1)
		return errDisk(errClosed)
	}
	return nil
}

func (d *disk) exit() { d.inflight.Add(-1) }

// Open opens, or creates, the store on disk in dir. The caller must Close
// it. Only one process may have a directory open at a time.
func Open(dir string) (*Store, error) {
	blobs := filepath.Join(dir, "blobs")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		return nil, err
	}
	cache := pebble.NewCache(256 << 20)
	defer cache.Unref()
	opts := &pebble.Options{
		Cache:        cache,
		MemTableSize: 32 << 20,
		Logger:       quietLogger{},
	}
	for i := range opts.Levels {
		opts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	db, err := pebble.Open(filepath.Join(dir, "db"), opts)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", dir, err)
	}
	s := New()
	s.disk = &disk{db: db, dir: dir, blobs: blobs}
	if err := s.load(); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: load %s: %w", dir, err)
	}
	return s, nil
}

// Close closes a store on disk; it does nothing for a store in memory.
func (s *Store) Close() error {
	d := s.disk
	if d == nil || d.closed.Swap(true) {
		return nil
	}
	for d.inflight.Load() > 0 {
		time.Sleep(time.Millisecond)
	}
	d.dropNow()
	return d.db.Close()
}

// OnDisk reports whether the store keeps its data on disk (Open).
func (s *Store) OnDisk() bool { return s.disk != nil }

// OnDisk reports whether the bucket's store keeps its data on disk.
func (b *Bucket) OnDisk() bool { return b.store.disk != nil }

// quietLogger drops Pebble's informational messages.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)           {}
func (quietLogger) Errorf(format string, a ...any) { log.Printf("pebble: "+format, a...) }
func (quietLogger) Fatalf(format string, a ...any) { log.Fatalf("pebble: "+format, a...) }

// errDisk is the error for a failed read or write of the store on disk.
func errDisk(err error) *Error {
	return Errorf(KindInternal, "fake store on disk: %v", err)
}

// bucketRec is a bucket's record on disk.
type bucketRec struct {
	Created          int64
	Versioning       bool                     `json:",omitempty"`
	Zonal            bool                     `json:",omitempty"`
	Attrs            *BucketAttrs             `json:",omitempty"`
	Notifications    map[string]*Notification `json:",omitempty"`
	LastNotification int64                    `json:",omitempty"`
	Policy           *Policy                  `json:",omitempty"`
	PolicySerial     int64                    `json:",omitempty"`
}

// objRec is an object generation's record on disk; the name and the
// generation are in the key, inline content follows the record.
type objRec struct {
	Gen     int64  `json:"g"`
	Meta    int64  `json:"m"`
	Size    int64  `json:"s,omitempty"`
	CRC     uint32 `json:"c,omitempty"`
	MD5     []byte `json:"h,omitempty"`
	Created int64  `json:"t"`
	Updated int64  `json:"u"`
	Deleted int64  `json:"d,omitempty"`
	Attrs   Attrs  `json:"a"`
	App     bool   `json:"p,omitempty"`
	Final   int64  `json:"f,omitempty"`
	Tenant  string `json:"n,omitempty"`
	Blob    string `json:"b,omitempty"` // the content's file under DIR/blobs; "" if inline
}

type hmacRec struct {
	Key    *HMACKey
	Serial int64
}

type usageRec struct{ Objects, Bytes int64 }

var genKey = []byte("G")

func bucketKey(name string) []byte { return []byte("B" + name) }

// objPrefix is the prefix of the keys of bucket's objects.
func objPrefix(bucket string) []byte { return []byte("O" + bucket + "\x00") }

// appendName appends name, escaped and terminated, to k.
func appendName(k []byte, name string) []byte {
	for i := 0; i < len(name); i++ {
		k = append(k, name[i])
		if name[i] == 0 {
			k = append(k, 0xff)
		}
	}
	return append(k, 0, 1)
}

// objKey is the key of generation gen of name in bucket.
func objKey(bucket, name string, gen int64) []byte {
	k := appendName(objPrefix(bucket), name)
	return binary.BigEndian.AppendUint64(k, uint64(gen))
}

// parseObjKey returns the name and generation of an object key whose
// bucket prefix is n bytes long.
func parseObjKey(k []byte, n int) (string, int64, bool) {
	k = k[n:]
	var name []byte
	for i := 0; i < len(k); i++ {
		if k[i] != 0 {
			continue
		}
		if i+1 < len(k) && k[i+1] == 0xff {
			name = append(name, k[:i+1]...)
			k = k[i+2:]
			i = -1
			continue
		}
		name = append(name, k[:i]...)
		if i+2+8 != len(k) || k[i+1] != 1 {
			return "", 0, false
		}
		return string(name), int64(binary.BigEndian.Uint64(k[i+2:])), true
	}
	return "", 0, false
}

func usageKey(bucket, tenant string) []byte { return []byte("U" + bucket + "\x00" + tenant) }

// prefixUpper is the smallest key above every key that starts with p.
func prefixUpper(p []byte) []byte {
	u := bytes.Clone(p)
	for i := len(u) - 1; i >= 0; i-- {
		if u[i] < 0xff {
			u[i]++
			return u[:i+1]
		}
	}
	return nil
}

// load reads the buckets, usage, HMAC keys and last generation of a store
// on disk.
func (s *Store) load() error {
	db := s.disk.db
	if v, closer, err := db.Get(genKey); err == nil {
		s.lastGen.Store(int64(binary.BigEndian.Uint64(v)))
		closer.Close()
	} else if !errors.Is(err, pebble.ErrNotFound) {
		return err
	}
	scan := func(prefix string, fn func(k, v []byte) error) error {
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte(prefix), UpperBound: prefixUpper([]byte(prefix))})
		if err != nil {
			return err
		}
		for ok := it.First(); ok; ok = it.Next() {
			if err := fn(it.Key()[len(prefix):], it.Value()); err != nil {
				it.Close()
				return err
			}
		}
		return it.Close()
	}
	err := scan("B", func(k, v []byte) error {
		var r bucketRec
		if err := json.Unmarshal(v, &r); err != nil {
			return err
		}
		b := s.newBucket(string(k), r.Versioning, r.Zonal, r.Created)
		if r.Attrs != nil {
			b.meta.attrs.Store(r.Attrs)
		}
		b.meta.notifications, b.meta.lastNotification = r.Notifications, r.LastNotification
		if r.Policy != nil {
			r.Policy.serial = r.PolicySerial
			b.meta.policy = r.Policy
		}
		s.buckets[b.name] = b
		return nil
	})
	if err != nil {
		return err
	}
	err = scan("U", func(k, v []byte) error {
		bucket, tenant, _ := bytes.Cut(k, []byte{0})
		b := s.buckets[string(bucket)]
		var r usageRec
		if b == nil || json.Unmarshal(v, &r) != nil {
			return nil
		}
		u := b.usageOf(string(tenant))
		u.objects, u.bytes = r.Objects, r.Bytes
		return nil
	})
	if err != nil {
		return err
	}
	return scan("H", func(k, v []byte) error {
		var r hmacRec
		if err := json.Unmarshal(v, &r); err != nil {
			return err
		}
		r.Key.serial = r.Serial
		if s.hmac.keys == nil {
			s.hmac.keys = make(map[string]*HMACKey)
		}
		s.hmac.keys[r.Key.AccessID] = r.Key
		return nil
	})
}

// set writes k=v, synced.
func (d *disk) set(k, v []byte) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.exit()
	if err := d.db.Set(k, v, pebble.Sync); err != nil {
		return errDisk(err)
	}
	return nil
}

// saveMeta writes the bucket's record. b.meta.mu is held.
func (b *Bucket) saveMetaLocked() error {
	d := b.store.disk
	if d == nil {
		return nil
	}
	r := bucketRec{Created: b.created, Versioning: b.versioning, Zonal: b.zonal,
		Attrs: b.meta.attrs.Load(), Notifications: b.meta.notifications,
		LastNotification: b.meta.lastNotification, Policy: b.meta.policy}
	if r.Policy != nil {
		r.PolicySerial = r.Policy.serial
	}
	v, err := json.Marshal(&r)
	if err != nil {
		return errDisk(err)
	}
	return d.set(bucketKey(b.name), v)
}

// saveMeta is saveMetaLocked for a caller that does not hold b.meta.mu.
func (b *Bucket) saveMeta() error {
	if b.store.disk == nil {
		return nil
	}
	b.meta.mu.Lock()
	defer b.meta.mu.Unlock()
	return b.saveMetaLocked()
}

// saveHMAC writes key k, or deletes it if del. s.hmac.mu is held.
func (s *Store) saveHMAC(k *HMACKey, del bool) error {
	d := s.disk
	if d == nil {
		return nil
	}
	key := []byte("H" + k.AccessID)
	if del {
		if err := d.enter(); err != nil {
			return err
		}
		defer d.exit()
		if err := d.db.Delete(key, pebble.Sync); err != nil {
			return errDisk(err)
		}
		return nil
	}
	v, err := json.Marshal(hmacRec{Key: k, Serial: k.serial})
	if err != nil {
		return errDisk(err)
	}
	return d.set(key, v)
}

// encode returns o's record, with its inline content after it.
func encodeObj(o *Object) []byte {
	r := objRec{Gen: o.generation, Meta: o.metageneration, Size: o.size, CRC: o.crc32c, Created: o.created,
		Updated: o.updated, Deleted: o.deleted, Attrs: o.attrs, Tenant: o.Tenant()}
	if o.hasMD5 {
		r.MD5 = o.md5[:]
	}
	if o.app != nil {
		r.App, r.Final = true, o.app.finalized
	}
	if o.blob != "" {
		r.Blob = filepath.Base(o.blob)
	}
	j, err := json.Marshal(&r)
	if err != nil {
		panic(err) // only plain types
	}
	v := make([]byte, 0, binary.MaxVarintLen64+len(j)+int(o.size))
	v = binary.AppendUvarint(v, uint64(len(j)))
	v = append(v, j...)
	if o.blob == "" {
		for _, p := range o.content {
			v = append(v, p...)
		}
	}
	return v
}

// decodeObj returns the object name, generation gen, of record v (which
// it does not keep). b.mu is held.
func (b *Bucket) decodeObj(name string, gen int64, v []byte) (*Object, error) {
	n, k := binary.Uvarint(v)
	if k <= 0 || uint64(len(v)-k) < n {
		return nil, errDisk(fmt.Errorf("object %q generation %d: bad record", name, gen))
	}
	var r objRec
	if err := json.Unmarshal(v[k:k+int(n)], &r); err != nil {
		return nil, errDisk(fmt.Errorf("object %q generation %d: %v", name, gen, err))
	}
	if gen == liveGen {
		gen = r.Gen
	}
	o := &Object{name: name, generation: gen, metageneration: r.Meta, size: r.Size, crc32c: r.CRC,
		created: r.Created, updated: r.Updated, deleted: r.Deleted, attrs: r.Attrs}
	o.hasMD5 = copy(o.md5[:], r.MD5) == MD5Len
	if r.App {
		o.app = &appendState{owner: b.owners[ownerKey(name, gen)], finalized: r.Final}
	}
	if r.Blob != "" {
		o.blob = filepath.Join(b.store.disk.blobs, r.Blob)
	} else if c := v[k+int(n):]; len(c) > 0 {
		o.content = [][]byte{bytes.Clone(c)}
	}
	if o.tenant = b.usage[r.Tenant]; o.tenant == nil {
		o.tenant = &usage{tenant: r.Tenant}
	}
	return o, nil
}

func ownerKey(name string, gen int64) string { return fmt.Sprintf("%d:%s", gen, name) }

// diskGet returns generation gen of name, or the live object if gen is 0;
// nil if there is none. b.mu is held.
func (b *Bucket) diskGet(name string, gen int64) (*Object, error) {
	d := b.store.disk
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.exit()
	get := func(g int64) (*Object, error) {
		v, closer, err := d.db.Get(objKey(b.name, name, g))
		if errors.Is(err, pebble.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, errDisk(err)
		}
		defer closer.Close()
		return b.decodeObj(name, g, v)
	}
	if gen != 0 {
		if o, err := get(gen); o != nil || err != nil {
			return o, err
		}
	}
	o, err := get(liveGen)
	if o == nil || err != nil || gen != 0 && o.generation != gen {
		return nil, err
	}
	return o, nil
}

// diskAscend calls fn with each stored generation from (name, gen) on, in
// order, until it returns false. b.mu is held.
func (b *Bucket) diskAscend(name string, gen int64, fn func(*Object) bool) error {
	d := b.store.disk
	if err := d.enter(); err != nil {
		return err
	}
	defer d.exit()
	p := objPrefix(b.name)
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: objKey(b.name, name, gen), UpperBound: prefixUpper(p)})
	if err != nil {
		return errDisk(err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		n, g, ok := parseObjKey(it.Key(), len(p))
		if !ok {
			return errDisk(fmt.Errorf("bad object key %q", it.Key()))
		}
		o, err := b.decodeObj(n, g, it.Value())
		if err != nil {
			return err
		}
		if !fn(o) {
			break
		}
	}
	return it.Error()
}

// diskEmpty reports whether the bucket holds no object generation.
func (b *Bucket) diskEmpty() (bool, error) {
	d := b.store.disk
	if err := d.enter(); err != nil {
		return false, err
	}
	defer d.exit()
	p := objPrefix(b.name)
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixUpper(p)})
	if err != nil {
		return false, errDisk(err)
	}
	defer it.Close()
	return !it.First(), it.Error()
}

// txn is one write to a store on disk: a batch applied under the bucket's
// lock, and the blob files to remove once it is synced.
type txn struct {
	b     *Bucket
	batch *pebble.Batch
	drop  []string
	users map[*usage]usageRec // usage records changed, with their new values
}

func (b *Bucket) newTxn() *txn {
	return &txn{b: b, batch: b.store.disk.db.NewBatch()}
}

// key is o's key.
func (t *txn) key(o *Object) []byte {
	if o.Live() {
		return objKey(t.b.name, o.name, liveGen)
	}
	return objKey(t.b.name, o.name, o.generation)
}

// put writes o's record.
func (t *txn) put(o *Object) {
	t.batch.Set(t.key(o), encodeObj(o), nil)
}

// count adds objects and bytes to the usage u.
func (t *txn) count(u *usage, objects, bytes int64) {
	if t.users == nil {
		t.users = make(map[*usage]usageRec)
	}
	r, ok := t.users[u]
	if !ok {
		r = usageRec{u.objects, u.bytes}
	}
	r.Objects += objects
	r.Bytes += bytes
	t.users[u] = r
}

// forget deletes o's record and, once synced, its blob.
func (t *txn) forget(o *Object) {
	t.batch.Delete(t.key(o), nil)
	if o.blob != "" {
		t.drop = append(t.drop, o.blob)
	}
	delete(t.b.owners, ownerKey(o.name, o.generation))
	t.count(t.b.usageOf(o.Tenant()), -1, -o.size)
}

// apply applies the batch: its writes are visible, not yet synced, and
// the usage counts are updated. b.mu is held for writing. The caller then
// releases it and calls wait.
func (t *txn) apply() error {
	for u, r := range t.users {
		v, _ := json.Marshal(r)
		t.batch.Set(usageKey(t.b.name, u.tenant), v, nil)
	}
	t.batch.Set(genKey, binary.BigEndian.AppendUint64(nil, uint64(t.b.store.lastGen.Load())), nil)
	d := t.b.store.disk
	if err := d.enter(); err != nil {
		t.batch.Close()
		t.batch = nil
		return err
	}
	if err := d.db.ApplyNoSyncWait(t.batch, pebble.Sync); err != nil {
		d.exit()
		t.batch.Close()
		t.batch = nil
		return errDisk(err)
	}
	for u, r := range t.users {
		u.objects, u.bytes = r.Objects, r.Bytes
	}
	return nil
}

// wait waits until the applied batch is synced, then has the blobs it no
// longer refers to removed once their grace is over (dropLater).
func (t *txn) wait() error {
	if t.batch == nil {
		return nil
	}
	err := t.batch.SyncWait()
	t.batch.Close()
	t.b.store.disk.exit()
	if err != nil {
		return errDisk(err)
	}
	for _, p := range t.drop {
		t.b.store.disk.dropLater(p)
	}
	return nil
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

// Sessions of a store on disk: opaque records by id, for the caller to
// keep its resumable sessions across restarts.

// SaveSession writes the record v of session id, synced; it does nothing
// for a store in memory.
func (s *Store) SaveSession(id string, v []byte) error {
	if s.disk == nil {
		return nil
	}
	return s.disk.set(sessionKey(id), v)
}

// DeleteSession removes the record of session id.
func (s *Store) DeleteSession(id string) error {
	if s.disk == nil {
		return nil
	}
	if err := s.disk.enter(); err != nil {
		return err
	}
	defer s.disk.exit()
	if err := s.disk.db.Delete(sessionKey(id), pebble.NoSync); err != nil {
		return errDisk(err)
	}
	return nil
}

func sessionKey(id string) []byte { return []byte("S" + id) }

// SavedSessions calls fn with each session record saved, in id order.
// The records are the caller's: the store keeps them and gives them back.
func (s *Store) SavedSessions(fn func(id string, v []byte)) error {
	if s.disk == nil {
		return nil
	}
	if err := s.disk.enter(); err != nil {
		return err
	}
	defer s.disk.exit()
	it, err := s.disk.db.NewIter(&pebble.IterOptions{LowerBound: []byte("S"), UpperBound: []byte("T")})
	if err != nil {
		return errDisk(err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		fn(string(it.Key()[1:]), bytes.Clone(it.Value()))
	}
	return it.Error()
}

// SessionDir returns the directory for the files of resumable sessions,
// created if needed; "" for a store in memory.
func (s *Store) SessionDir() (string, error) {
	if s.disk == nil {
		return "", nil
	}
	p := filepath.Join(s.disk.dir, "sessions")
	return p, os.MkdirAll(p, 0o755)
}
