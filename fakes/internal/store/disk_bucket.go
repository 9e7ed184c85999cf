package store

import "slices"

// The write methods of a bucket on disk: each reads what it needs and
// applies its batch under the bucket's lock, then waits for the sync
// after releasing it (see disk.go).

// diskAdd is add on disk; o's content is stored already.
func (b *Bucket) diskAdd(o *Object, cond *Conditions, tenant string, sess *sessionWrite) (*Object, error) {
	t, err := func() (*txn, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		if err := b.takesLocked(o); err != nil {
			return nil, err
		}
		old, err := b.diskGet(o.name, 0)
		if err != nil {
			return nil, err
		}
		now, err := b.replacesLocked(o, old, cond)
		if err != nil {
			return nil, err
		}
		t := b.newTxn()
		if old != nil {
			t.retire(old, now)
		}
		o.tenant = b.usageOf(tenant)
		t.count(o.tenant, 1, o.size)
		t.put(o)
		if sess != nil {
			t.batch.Set(sessionKey(sess.id), sess.rec(o.generation), nil)
		}
		if err := t.apply(); err != nil {
			return nil, err
		}
		if o.app != nil {
			b.owners[ownerKey(o.name, o.generation)] = o.app.owner
		}
		return t, nil
	}()
	if err != nil {
		return nil, err
	}
	return o, t.wait()
}

// retire makes the live object o noncurrent, or forgets it in a bucket
// without versioning. b.mu is held.
func (t *txn) retire(o *Object, now int64) {
	if !t.b.versioningLocked() {
		t.forget(o)
		return
	}
	nc := *o
	nc.deleted = now
	delete(t.b.owners, ownerKey(o.name, o.generation))
	t.batch.Delete(t.key(o), nil) // the live key
	t.put(&nc)
}

// diskReplaceAppendable is ReplaceAppendable on disk: the bytes of c past
// the stored object's size are written to its blob, then its record.
func (b *Bucket) diskReplaceAppendable(name string, gen int64, owner any, c Content, final bool) (*Object, bool) {
	check := func() *Object {
		o, err := b.diskGet(name, 0)
		if err != nil || b.deleted || o == nil || o.generation != gen || o.app == nil || o.app.owner != owner {
			return nil
		}
		return o
	}
	b.mu.RLock()
	o := check()
	b.mu.RUnlock()
	if o == nil {
		return nil, false
	}
	// The writer's calls are serialized by its owner: no other call
	// writes the blob meanwhile.
	blob := o.blob
	if c.Size > o.size {
		var err error
		if blob, err = b.store.disk.appendBlob(o, &c); err != nil {
			return nil, false
		}
	}
	var n Object
	t, ok := func() (*txn, bool) {
		b.mu.Lock()
		defer b.mu.Unlock()
		o := check()
		if o == nil {
			return nil, false
		}
		n = *o
		n.size, n.crc32c, n.blob, n.content = c.Size, c.CRC32C, blob, nil
		n.updated = max(NowMicro(), o.updated)
		if final {
			n.app = &appendState{owner: owner, finalized: n.updated}
		}
		t := b.newTxn()
		t.count(b.usageOf(o.Tenant()), 0, n.size-o.size)
		t.put(&n)
		if t.apply() != nil {
			return nil, false
		}
		if final {
			// A finalized object needs no owner: a later reopen (a
			// retried finish_write) adopts one (AdoptAppendable), so
			// that the owners kept are those of unfinalized objects.
			delete(b.owners, ownerKey(name, gen))
		}
		return t, true
	}()
	if !ok || t.wait() != nil {
		return nil, false
	}
	return &n, true
}

// diskRemove is Remove on disk.
func (b *Bucket) diskRemove(name string, gen int64, cond *Conditions) error {
	t, err := func() (*txn, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		o, err := b.checkedLocked(name, gen, cond)
		if err != nil {
			return nil, err
		}
		if o.Unfinalized() {
			return nil, ErrUnfinalized(o, "deleted")
		}
		t := b.newTxn()
		if o.Live() && gen == 0 {
			t.retire(o, NowMicro())
		} else {
			t.forget(o)
		}
		return t, t.apply()
	}()
	if err != nil {
		return err
	}
	return t.wait()
}

// diskUpdate is Update on disk.
func (b *Bucket) diskUpdate(name string, gen int64, cond *Conditions, edit func(*Attrs) error) (*Object, error) {
	var c *Object
	t, err := func() (*txn, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		o, err := b.checkedLocked(name, gen, cond)
		if err != nil {
			return nil, err
		}
		c = o.copyMeta()
		if err := edit(&c.attrs); err != nil {
			return nil, err
		}
		c.metageneration++
		c.updated = max(NowMicro(), o.updated)
		t := b.newTxn()
		t.put(c)
		return t, t.apply()
	}()
	if err != nil {
		return nil, err
	}
	return c, t.wait()
}

// AdoptAppendable makes owner the owner of the appendable object name,
// generation gen, if it has none: on disk, an object stored before a
// restart has lost its writer state, which the caller builds again. It
// returns the object's owner then, nil if the object is gone.
func (b *Bucket) AdoptAppendable(name string, gen int64, owner any) any {
	if b.store.disk == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	o, err := b.diskGet(name, gen)
	if err != nil || o == nil || o.app == nil {
		return nil
	}
	k := ownerKey(name, gen)
	if cur := b.owners[k]; cur != nil {
		return cur
	}
	b.owners[k] = owner
	return owner
}

// Content returns o's content, to store it again (a copy or a rewrite):
// the parts of an object in memory, shared, or a reference to an object
// on disk, whose bytes are read when they are stored.
func (o *Object) Content() Content {
	c := Content{Size: o.size, CRC32C: o.crc32c, MD5: o.md5, HasMD5: o.hasMD5}
	if o.blob != "" {
		c.objs = []*Object{o}
	} else {
		c.Parts = slices.Clip(o.content)
	}
	return c
}
