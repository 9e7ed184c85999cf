package store

import (
	"encoding/base64"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protowire"
)

// KindForbidden is a request the service refuses whatever its rights, such
// as shortening a locked retention policy: HTTP 403.
var KindForbidden = Kind{codes.PermissionDenied, http.StatusForbidden, "forbidden"}

// ProjectNumber is the number of the fake's one project, in the entities
// of the ACLs it makes ("project-owners-0") and its service account.
const ProjectNumber = "0"

// BucketAttrs are the attributes of a bucket that buckets.patch and
// buckets.update, the ACL methods and lockRetentionPolicy change. A
// BucketAttrs the store handed out is never modified: a change stores a
// changed copy (UpdateAttrs), so readers hold one without a lock.
type BucketAttrs struct {
	Metageneration        int64
	Updated               int64 // Unix microseconds
	StorageClass          string
	Versioning            bool
	Labels                map[string]string
	ACL                   []ACLEntry // roles READER, WRITER, OWNER
	DefaultObjectACL      []ACLEntry // roles READER, OWNER
	DefaultEventBasedHold bool
	Retention             *Retention // nil: no retention policy
	// Other holds the fields the store keeps and returns without reading
	// them (cors, lifecycle, website, logging, ...), by the JSON API's
	// field name, as JSON text.
	Other map[string]string
}

// Retention is a bucket's retention policy. The store keeps it and its
// lock; it does not hold objects back.
type Retention struct {
	Period    int64 // seconds
	Effective int64 // Unix microseconds
	Locked    bool
}

// Clone returns a deep copy of a, for a change.
func (a *BucketAttrs) Clone() *BucketAttrs {
	c := *a
	c.Labels = maps.Clone(a.Labels)
	c.ACL = slices.Clone(a.ACL)
	c.DefaultObjectACL = slices.Clone(a.DefaultObjectACL)
	c.Other = maps.Clone(a.Other)
	if a.Retention != nil {
		r := *a.Retention
		c.Retention = &r
	}
	return &c
}

// DefaultBucketACL is the ACL of a new bucket, and of the predefined ACL
// projectPrivate: the project's owners own it, its editors write and its
// viewers read.
func DefaultBucketACL() []ACLEntry {
	return []ACLEntry{
		{Entity: "project-owners-" + ProjectNumber, Role: "OWNER"},
		{Entity: "project-editors-" + ProjectNumber, Role: "WRITER"},
		{Entity: "project-viewers-" + ProjectNumber, Role: "READER"},
	}
}

// DefaultObjectACL is the default object ACL of a new bucket, and the
// object ACL of the predefined ACL projectPrivate.
func DefaultObjectACL() []ACLEntry {
	return []ACLEntry{
		{Entity: "project-owners-" + ProjectNumber, Role: "OWNER"},
		{Entity: "project-editors-" + ProjectNumber, Role: "OWNER"},
		{Entity: "project-viewers-" + ProjectNumber, Role: "READER"},
	}
}

// bucketMeta is what a bucket keeps besides its objects: its attributes,
// notification configs and IAM policy. The zero value is a bucket's
// defaults.
type bucketMeta struct {
	attrs atomic.Pointer[BucketAttrs] // nil until first read: the defaults

	mu               sync.Mutex // guards the fields below
	notifications    map[string]*Notification
	lastNotification int64
	policy           *Policy // nil: the default policy
}

// Attrs returns the bucket's attributes; the caller must not change them.
func (b *Bucket) Attrs() *BucketAttrs {
	if a := b.meta.attrs.Load(); a != nil {
		return a
	}
	b.meta.attrs.CompareAndSwap(nil, &BucketAttrs{
		Metageneration:   1,
		Updated:          b.created,
		StorageClass:     DefaultStorageClass,
		Versioning:       b.versioning,
		ACL:              DefaultBucketACL(),
		DefaultObjectACL: DefaultObjectACL(),
	})
	return b.meta.attrs.Load()
}

// versioningLocked reports whether the bucket keeps noncurrent versions.
// b.mu is held.
func (b *Bucket) versioningLocked() bool { return b.Attrs().Versioning }

// UpdateAttrs changes the bucket's attributes with edit, if the
// metageneration conditions of cond hold (its generation conditions are
// not looked at), and returns the new attributes: a copy with the
// metageneration one higher and a new update time. edit gets a deep copy
// and may change it; an error from edit changes nothing.
func (b *Bucket) UpdateAttrs(cond *Conditions, edit func(*BucketAttrs) error) (*BucketAttrs, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.deleted {
		return nil, ErrBucketNotFound(b.name)
	}
	old := b.Attrs()
	if err := CheckBucket(cond, old.Metageneration); err != nil {
		return nil, err
	}
	c := old.Clone()
	if err := edit(c); err != nil {
		return nil, err
	}
	c.Metageneration = old.Metageneration + 1
	c.Updated = max(NowMicro(), old.Updated)
	b.meta.attrs.Store(c)
	if err := b.saveMeta(); err != nil {
		b.meta.attrs.Store(old)
		return nil, err
	}
	return c, nil
}

// CheckBucket evaluates the metageneration conditions of cond against a
// bucket's metageneration: a failed ifMetagenerationMatch is a 412, a
// failed ifMetagenerationNotMatch a 304.
func CheckBucket(cond *Conditions, meta int64) error {
	switch {
	case cond == nil:
	case cond.MetaMatch != nil && *cond.MetaMatch != meta:
		return NewPrecondition(false, "ifMetagenerationMatch=%d, the bucket's metageneration is %d", *cond.MetaMatch, meta)
	case cond.MetaNotMatch != nil && *cond.MetaNotMatch == meta:
		return NewPrecondition(true, "ifMetagenerationNotMatch=%d is the bucket's metageneration", meta)
	}
	return nil
}

// MaxNotifications is how many notification configs a bucket takes, as on
// GCS.
const MaxNotifications = 100

// Notification is a bucket's notification config. The store keeps it and
// sends nothing.
type Notification struct {
	ID               string
	Topic            string
	PayloadFormat    string
	EventTypes       []string
	ObjectNamePrefix string
	CustomAttributes map[string]string
}

// AddNotification stores n, with a new ID, and returns it.
func (b *Bucket) AddNotification(n Notification) (*Notification, error) {
	if b.isDeleted() {
		return nil, ErrBucketNotFound(b.name)
	}
	m := &b.meta
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.notifications) >= MaxNotifications {
		return nil, Errorf(KindInvalid, "bucket %q already has %d notification configs, the most it may have", b.name, MaxNotifications)
	}
	if m.notifications == nil {
		m.notifications = make(map[string]*Notification)
	}
	m.lastNotification++
	n.ID = strconv.FormatInt(m.lastNotification, 10)
	n.EventTypes = slices.Clone(n.EventTypes)
	n.CustomAttributes = maps.Clone(n.CustomAttributes)
	m.notifications[n.ID] = &n
	if err := b.saveMetaLocked(); err != nil {
		delete(m.notifications, n.ID)
		return nil, err
	}
	return &n, nil
}

// Notification returns notification config id; the caller must not change
// it.
func (b *Bucket) Notification(id string) (*Notification, error) {
	if b.isDeleted() {
		return nil, ErrBucketNotFound(b.name)
	}
	b.meta.mu.Lock()
	defer b.meta.mu.Unlock()
	n := b.meta.notifications[id]
	if n == nil {
		return nil, Errorf(KindNotFound, "notification config %q not found in bucket %q", id, b.name)
	}
	return n, nil
}

// Notifications returns the bucket's notification configs in the order
// they were added; the caller must not change them.
func (b *Bucket) Notifications() ([]*Notification, error) {
	if b.isDeleted() {
		return nil, ErrBucketNotFound(b.name)
	}
	b.meta.mu.Lock()
	out := slices.Collect(maps.Values(b.meta.notifications))
	b.meta.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		x, _ := strconv.ParseInt(out[i].ID, 10, 64)
		y, _ := strconv.ParseInt(out[j].ID, 10, 64)
		return x < y
	})
	return out, nil
}

// DeleteNotification deletes notification config id.
func (b *Bucket) DeleteNotification(id string) error {
	if _, err := b.Notification(id); err != nil {
		return err
	}
	b.meta.mu.Lock()
	defer b.meta.mu.Unlock()
	if b.meta.notifications[id] == nil {
		return Errorf(KindNotFound, "notification config %q not found in bucket %q", id, b.name)
	}
	n := b.meta.notifications[id]
	delete(b.meta.notifications, id)
	if err := b.saveMetaLocked(); err != nil {
		b.meta.notifications[id] = n
		return err
	}
	return nil
}

// isDeleted reports whether the bucket was deleted.
func (b *Bucket) isDeleted() bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.deleted
}

// Policy is a bucket's IAM policy. The store keeps it; it grants nothing
// and denies nothing.
type Policy struct {
	Version  int64
	Bindings []Binding
	Etag     string
	serial   int64 // the etag's number
}

// Binding is one binding of an IAM policy: a role, its members and a
// condition (the JSON API's form, as JSON text; "" for none).
type Binding struct {
	Role      string
	Members   []string
	Condition string
}

// defaultPolicy is the IAM policy of a new bucket: the legacy roles its
// default ACL stands for.
func defaultPolicy() *Policy {
	p := ProjectNumber
	return &Policy{Version: 1, serial: 1, Etag: PolicyEtag(1), Bindings: []Binding{
		{Role: "roles/storage.legacyBucketOwner", Members: []string{"projectEditor:" + p, "projectOwner:" + p}},
		{Role: "roles/storage.legacyBucketReader", Members: []string{"projectViewer:" + p}},
	}}
}

// PolicyEtag is the etag of the IAM policy with serial number n, in the
// form GCS gives etags ("CAE=" for 1).
func PolicyEtag(n int64) string { return MetaEtag(n) }

// Policy returns the bucket's IAM policy; the caller must not change it.
func (b *Bucket) Policy() (*Policy, error) {
	if b.isDeleted() {
		return nil, ErrBucketNotFound(b.name)
	}
	b.meta.mu.Lock()
	defer b.meta.mu.Unlock()
	return b.policyLocked(), nil
}

// policyLocked returns the bucket's IAM policy. b.meta.mu is held.
func (b *Bucket) policyLocked() *Policy {
	if b.meta.policy == nil {
		b.meta.policy = defaultPolicy()
	}
	return b.meta.policy
}

// SetPolicy replaces the bucket's IAM policy with p, if etag is "" or the
// etag of the policy in place (else 412), and returns the new policy,
// with a new etag.
func (b *Bucket) SetPolicy(p Policy, etag string) (*Policy, error) {
	if b.isDeleted() {
		return nil, ErrBucketNotFound(b.name)
	}
	b.meta.mu.Lock()
	defer b.meta.mu.Unlock()
	cur := b.policyLocked()
	if etag != "" && etag != cur.Etag {
		return nil, Errorf(KindPrecondition, "precondition failed: the policy's etag is %q, not %q", cur.Etag, etag)
	}
	p.Bindings = slices.Clone(p.Bindings)
	for i := range p.Bindings {
		p.Bindings[i].Members = slices.Clone(p.Bindings[i].Members)
	}
	p.serial = cur.serial + 1
	p.Etag = PolicyEtag(p.serial)
	if p.Version == 0 {
		p.Version = 1
	}
	b.meta.policy = &p
	if err := b.saveMetaLocked(); err != nil {
		b.meta.policy = cur
		return nil, err
	}
	return &p, nil
}

// MetaEtag is the etag of a resource at metageneration (or version) n, in
// the form GCS gives them: the base64 of the protobuf encoding of field 1
// set to n ("CAE=" for 1, "CAI=" for 2).
func MetaEtag(n int64) string {
	return base64.StdEncoding.EncodeToString(protowire.AppendVarint([]byte{0x08}, uint64(n)))
}
