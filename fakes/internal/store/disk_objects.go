package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
)

// The records of the object generations of a store on disk, and their
// reads: a get is one Pebble lookup, a listing a range scan.

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
