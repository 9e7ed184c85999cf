package core

import (
	"bytes"
	"encoding/json"
	"net/url"
	"slices"

	"github.com/objup/objup/fakes/internal/store"
)

type Versioning struct {
	Enabled bool `json:"enabled"`
}

type RetentionPolicy struct {
	RetentionPeriod string `json:"retentionPeriod"`
	EffectiveTime   string `json:"effectiveTime,omitempty"`
	IsLocked        bool   `json:"isLocked,omitempty"`
}

// bucketMetadata is a bucket resource as a client sends it: absent fields
// are nil, null ones "null".
type BucketMetadata map[string]json.RawMessage

// bucketOutputFields are the bucket fields a client cannot set: they are
// ignored in a request, as GCS does (location and the others fixed at
// creation included).
var bucketOutputFields = map[string]bool{
	"kind": true, "id": true, "selfLink": true, "name": true, "projectNumber": true,
	"metageneration": true, "location": true, "locationType": true, "etag": true,
	"timeCreated": true, "updated": true, "owner": true, "satisfiesPZS": true,
	"satisfiesPZI": true, "generation": true, "hardDeleteTime": true, "softDeleteTime": true,
}

// apply sets a's fields from m: storageClass, versioning, labels, acl,
// defaultObjectAcl, defaultEventBasedHold and retentionPolicy, and keeps
// any other field that is not output only, as given. With patch, absent
// fields keep their values, null ones are cleared and labels merge (a null
// value removes its label); without, absent fields are cleared, but for
// the ACLs, which are kept. Then the predefinedAcl and
// predefinedDefaultObjectAcl parameters of q replace the ACLs.
func (m BucketMetadata) Apply(a *store.BucketAttrs, q url.Values, patch bool) error {
	om := ObjectMetadata(m)
	if v, present, _, err := om.Str("storageClass"); err != nil {
		return err
	} else if present || !patch {
		a.StorageClass = v
		if v == "" {
			a.StorageClass = store.DefaultStorageClass
		}
	}
	if raw, present := m["versioning"]; present || !patch {
		var v Versioning
		if !IsNull(raw) {
			if err := json.Unmarshal(raw, &v); err != nil {
				return store.Errorf(store.KindInvalid, "field versioning: %v", err)
			}
		}
		a.Versioning = v.Enabled
	}
	if raw, present := m["defaultEventBasedHold"]; present || !patch {
		var v bool
		if !IsNull(raw) {
			if err := json.Unmarshal(raw, &v); err != nil {
				return store.Errorf(store.KindInvalid, "field defaultEventBasedHold: %v", err)
			}
		}
		a.DefaultEventBasedHold = v
	}
	if err := m.applyLabels(a, patch); err != nil {
		return err
	}
	if err := m.applyRetention(a, patch); err != nil {
		return err
	}
	for _, f := range []struct {
		key    string
		bucket bool
		dst    *[]store.ACLEntry
	}{{"acl", true, &a.ACL}, {"defaultObjectAcl", false, &a.DefaultObjectACL}} {
		raw, present := m[f.key]
		if !present {
			continue
		}
		acl, err := parseACL(raw, f.key, f.bucket)
		if err != nil {
			return err
		}
		*f.dst = acl
	}
	if !patch {
		a.Other = nil
	}
	for k, raw := range m {
		if bucketOutputFields[k] || knownBucketFields[k] {
			continue
		}
		if IsNull(raw) {
			delete(a.Other, k)
			continue
		}
		if a.Other == nil {
			a.Other = make(map[string]string)
		}
		var c bytes.Buffer
		if err := json.Compact(&c, raw); err != nil {
			return store.Errorf(store.KindInvalid, "field %s: %v", k, err)
		}
		a.Other[k] = c.String()
	}
	if len(a.Other) == 0 {
		a.Other = nil
	}
	if p := q.Get("predefinedAcl"); p != "" {
		acl, ok := predefinedBucketACLs[p]
		if !ok {
			return store.Errorf(store.KindInvalid, "predefinedAcl %q is not a predefined bucket ACL", p)
		}
		a.ACL = slices.Clone(acl)
	}
	if p := q.Get("predefinedDefaultObjectAcl"); p != "" {
		acl, ok := PredefinedObjectACLs[p]
		if !ok {
			return store.Errorf(store.KindInvalid, "predefinedDefaultObjectAcl %q is not a predefined object ACL", p)
		}
		a.DefaultObjectACL = slices.Clone(acl)
	}
	return nil
}

// knownBucketFields are the fields apply reads itself.
var knownBucketFields = map[string]bool{
	"storageClass": true, "versioning": true, "defaultEventBasedHold": true, "labels": true,
	"retentionPolicy": true, "acl": true, "defaultObjectAcl": true,
}

// applyLabels sets a's labels from m's.
func (m BucketMetadata) applyLabels(a *store.BucketAttrs, patch bool) error {
	raw, present := m["labels"]
	switch {
	case !present && patch:
		return nil
	case !present || IsNull(raw):
		a.Labels = nil
		return nil
	}
	var kv map[string]*string
	if err := json.Unmarshal(raw, &kv); err != nil {
		return store.Errorf(store.KindInvalid, "field labels: %v", err)
	}
	if !patch {
		a.Labels = nil
	}
	for k, v := range kv {
		if v == nil {
			delete(a.Labels, k)
			continue
		}
		if a.Labels == nil {
			a.Labels = make(map[string]string, len(kv))
		}
		a.Labels[k] = *v
	}
	if len(a.Labels) == 0 {
		a.Labels = nil
	}
	return nil
}

// applyRetention sets a's retention policy from m's retentionPolicy: a
// period in seconds (a string or a number), which takes effect now. A
// locked policy can be lengthened, not shortened nor removed: 403.
func (m BucketMetadata) applyRetention(a *store.BucketAttrs, patch bool) error {
	raw, present := m["retentionPolicy"]
	if !present && patch {
		return nil
	}
	if !present || IsNull(raw) {
		if a.Retention != nil && a.Retention.Locked {
			return store.Errorf(store.KindForbidden, "the bucket's retention policy is locked: it cannot be removed")
		}
		a.Retention = nil
		return nil
	}
	var in struct {
		RetentionPeriod json.RawMessage `json:"retentionPeriod"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return store.Errorf(store.KindInvalid, "field retentionPolicy: %v", err)
	}
	period, err := JSONInt(in.RetentionPeriod, "retentionPolicy.retentionPeriod")
	if err != nil {
		return err
	}
	if period <= 0 || period > 3155760000 {
		return store.Errorf(store.KindInvalid, "retentionPolicy.retentionPeriod %d is not 1 second to 100 years", period)
	}
	if old := a.Retention; old != nil {
		if old.Locked && period < old.Period {
			return store.Errorf(store.KindForbidden, "the bucket's retention policy is locked: its period of %d s cannot be shortened to %d s", old.Period, period)
		}
		if old.Period == period {
			return nil
		}
		a.Retention = &store.Retention{Period: period, Effective: store.NowMicro(), Locked: old.Locked}
		return nil
	}
	a.Retention = &store.Retention{Period: period, Effective: store.NowMicro()}
	return nil
}
