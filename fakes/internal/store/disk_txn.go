package store

import (
	"encoding/binary"
	"encoding/json"

	"github.com/cockroachdb/pebble/v2"
)

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
