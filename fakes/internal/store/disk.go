package store

import (
	"errors"
	"fmt"
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
