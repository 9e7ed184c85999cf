package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"

	"github.com/cockroachdb/pebble/v2"
)

// The records of a store on disk other than the objects': the buckets',
// the per-tenant usage and the HMAC keys, read by Open and written as
// they change.

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

type hmacRec struct {
	Key    *HMACKey
	Serial int64
}

type usageRec struct{ Objects, Bytes int64 }

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
