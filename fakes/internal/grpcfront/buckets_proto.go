package grpcfront

import (
	"encoding/json"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/objup/objup/fakes/internal/core"
	"github.com/objup/objup/fakes/internal/store"
)

// protoBucket is the part of a storage v2 Bucket that CreateBucket and
// UpdateBucket read.
type protoBucket struct {
	name, storageClass string
	eventHold          bool
	labels             map[string]string
	versioning         bool
	retention          *int64 // seconds; nil: no retention_policy
	acl, defaultACL    []store.ACLEntry
}

// decode reads the fields of an encoded Bucket that the fake sets.
func (pb *protoBucket) decode(b []byte) error {
	return eachField(b, func(f field) error {
		switch {
		case f.num == 14 && f.typ == protowire.VarintType:
			pb.eventHold = f.v != 0
		case f.typ != protowire.BytesType:
		case f.num == 1:
			pb.name = string(f.b)
		case f.num == 7:
			pb.storageClass = string(f.b)
		case f.num == 15:
			var k, v string
			if err := eachField(f.b, func(f field) error {
				switch f.num {
				case 1:
					k = string(f.b)
				case 2:
					v = string(f.b)
				}
				return nil
			}); err != nil {
				return err
			}
			if pb.labels == nil {
				pb.labels = make(map[string]string)
			}
			pb.labels[k] = v
		case f.num == 17:
			return eachField(f.b, func(f field) error {
				if f.num == 1 {
					pb.versioning = f.v != 0
				}
				return nil
			})
		case f.num == 22:
			var secs int64
			pb.retention = &secs
			return eachField(f.b, func(f field) error {
				if f.num == 4 && f.typ == protowire.BytesType {
					return eachField(f.b, func(f field) error {
						if f.num == 1 && f.typ == protowire.VarintType {
							secs = int64(f.v)
						}
						return nil
					})
				}
				return nil
			})
		case f.num == 8, f.num == 9:
			var e store.ACLEntry
			if err := eachField(f.b, func(f field) error {
				switch {
				case f.typ != protowire.BytesType:
				case f.num == 1:
					e.Role = string(f.b)
				case f.num == 3:
					e.Entity = string(f.b)
				}
				return nil
			}); err != nil {
				return err
			}
			if f.num == 8 {
				pb.acl = append(pb.acl, e)
			} else {
				pb.defaultACL = append(pb.defaultACL, e)
			}
		}
		return nil
	})
}

// bucketOutputOnly are the Bucket fields an update mask may name that a
// client cannot set: they are ignored, as AIP-161 says.
var bucketOutputOnly = map[string]bool{
	"name": true, "bucket_id": true, "etag": true, "project": true, "metageneration": true,
	"location": true, "location_type": true, "create_time": true, "update_time": true,
	"owner": true, "satisfies_pzs": true,
}

// bucketUpdatable are the fields "*" stands for.
var bucketUpdatable = []string{"storage_class", "versioning", "labels", "retention_policy", "default_event_based_hold", "acl", "default_object_acl"}

// apply sets the fields of a that paths name ("*": all those the fake
// sets) from pb, then the predefined ACLs of q, through the JSON API's
// rules (bucketMetadata.apply), so that both APIs check them alike.
func (pb *protoBucket) apply(a *store.BucketAttrs, paths []string, q map[string]string) error {
	m := core.BucketMetadata{}
	set := func(key string, v any) {
		raw, _ := json.Marshal(v)
		m[key] = raw
	}
	var expand []string
	for _, p := range paths {
		if p == "*" {
			expand = append(expand, bucketUpdatable...)
			continue
		}
		expand = append(expand, p)
	}
	labels := map[string]*string{} // the label changes: nil removes
	for _, p := range expand {
		if key, ok := strings.CutPrefix(p, "labels."); ok {
			if v, ok := pb.labels[key]; ok {
				labels[key] = &v
			} else {
				labels[key] = nil
			}
			continue
		}
		switch p {
		case "storage_class":
			set("storageClass", pb.storageClass)
		case "versioning":
			set("versioning", core.Versioning{Enabled: pb.versioning})
		case "labels":
			a.Labels = nil // the whole map is replaced
			for k, v := range pb.labels {
				labels[k] = &v
			}
		case "retention_policy":
			if pb.retention == nil || *pb.retention == 0 { // none, or empty: removed
				set("retentionPolicy", nil)
			} else {
				set("retentionPolicy", map[string]int64{"retentionPeriod": *pb.retention})
			}
		case "default_event_based_hold":
			set("defaultEventBasedHold", pb.eventHold)
		case "acl":
			set("acl", aclEntries(pb.acl))
		case "default_object_acl":
			set("defaultObjectAcl", aclEntries(pb.defaultACL))
		default:
			if !bucketOutputOnly[p] {
				return status.Errorf(codes.Unimplemented, "fakes: UpdateBucket of %q is not supported by the fake", p)
			}
		}
	}
	if len(labels) > 0 {
		set("labels", labels)
	}
	vals := map[string][]string{}
	for k, v := range q {
		if v != "" {
			vals[k] = []string{v}
		}
	}
	return m.Apply(a, vals, true)
}

// aclEntries is acl as the JSON API's list of entries, never null.
func aclEntries(acl []store.ACLEntry) []map[string]string {
	out := make([]map[string]string, 0, len(acl))
	for _, e := range acl {
		out = append(out, map[string]string{"entity": e.Entity, "role": e.Role})
	}
	return out
}

// appendBucket appends the encoding of bucket b with the attributes a, a
// storage v2 Bucket, to out.
func appendBucket(out []byte, b *store.Bucket, a *store.BucketAttrs) []byte {
	str := func(num protowire.Number, s string) {
		if s != "" {
			out = appendBytesField(out, num, []byte(s))
		}
	}
	msg := func(num protowire.Number, m []byte) {
		out = protowire.AppendTag(out, num, protowire.BytesType)
		out = protowire.AppendBytes(out, m)
	}
	str(1, b.ResName())
	str(2, b.Name())
	str(3, "projects/"+store.ProjectNumber)
	out = appendVarintField(out, 4, uint64(a.Metageneration))
	loc, locType := b.Location()
	str(5, loc)
	str(6, locType)
	str(7, a.StorageClass)
	for _, e := range a.ACL {
		msg(8, appendACLEntry(nil, b.Name()+"/"+e.Entity, e, a.Metageneration))
	}
	for _, e := range a.DefaultObjectACL {
		msg(9, appendACLEntry(nil, b.Name()+"/"+e.Entity, e, a.Metageneration))
	}
	msg(11, appendTimestamp(nil, b.Created()))
	msg(13, appendTimestamp(nil, a.Updated))
	if a.DefaultEventBasedHold {
		out = appendVarintField(out, 14, 1)
	}
	for k, v := range a.Labels {
		var kv []byte
		kv = appendBytesField(kv, 1, []byte(k))
		kv = appendBytesField(kv, 2, []byte(v))
		msg(15, kv)
	}
	if a.Versioning {
		msg(17, appendVarintField(nil, 1, 1))
	}
	msg(19, appendBytesField(nil, 1, []byte("project-owners-"+store.ProjectNumber)))
	if r := a.Retention; r != nil {
		var rp []byte
		rp = protowire.AppendTag(rp, 1, protowire.BytesType)
		rp = protowire.AppendBytes(rp, appendTimestamp(nil, r.Effective))
		if r.Locked {
			rp = appendVarintField(rp, 2, 1)
		}
		rp = protowire.AppendTag(rp, 4, protowire.BytesType)
		rp = protowire.AppendBytes(rp, appendVarintField(nil, 1, uint64(r.Period)))
		msg(22, rp)
	}
	str(29, store.MetaEtag(a.Metageneration))
	return out
}

// appendACLEntry appends the encoding of ACL entry e, a
// BucketAccessControl or ObjectAccessControl (same fields): role 1, id 2,
// entity 3, email 5, domain 6, project_team 7, etag 8.
func appendACLEntry(out []byte, id string, e store.ACLEntry, meta int64) []byte {
	r := (&core.ACLResource{Entity: e.Entity}).Describe()
	out = appendBytesField(out, 1, []byte(e.Role))
	out = appendBytesField(out, 2, []byte(id))
	out = appendBytesField(out, 3, []byte(e.Entity))
	if r.Email != "" {
		out = appendBytesField(out, 5, []byte(r.Email))
	}
	if r.Domain != "" {
		out = appendBytesField(out, 6, []byte(r.Domain))
	}
	if t := r.ProjectTeam; t != nil {
		var pt []byte
		pt = appendBytesField(pt, 1, []byte(t.ProjectNumber))
		pt = appendBytesField(pt, 2, []byte(t.Team))
		out = protowire.AppendTag(out, 7, protowire.BytesType)
		out = protowire.AppendBytes(out, pt)
	}
	return appendBytesField(out, 8, []byte(store.MetaEtag(meta)))
}

// appendTimestamp appends a google.protobuf.Timestamp of us, Unix
// microseconds.
func appendTimestamp(out []byte, us int64) []byte {
	t := time.UnixMicro(us)
	out = appendVarintField(out, 1, uint64(t.Unix()))
	if n := t.Nanosecond(); n != 0 {
		out = appendVarintField(out, 2, uint64(n))
	}
	return out
}
