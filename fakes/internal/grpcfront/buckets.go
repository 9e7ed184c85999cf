package grpcfront

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/calls"
	"github.com/objup/objup/fakes/internal/core"
	"github.com/objup/objup/fakes/internal/store"
)

// The bucket and IAM methods of storage v2 (GetBucket, CreateBucket,
// DeleteBucket, ListBuckets, UpdateBucket, LockBucketRetentionPolicy,
// GetIamPolicy, SetIamPolicy, TestIamPermissions; RewriteObject is in
// grpc_rewrite.go), on the
// store the JSON API's bucket methods use. Their messages are not in
// internal/wire: they are served raw (see rpcs and grpc_raw.go), and
// written here with protowire, field by field.

// The gRPC method names served here.
const (
	methodGetBucket          = "GetBucket"
	methodCreateBucket       = "CreateBucket"
	methodDeleteBucket       = "DeleteBucket"
	methodListBuckets        = "ListBuckets"
	methodUpdateBucket       = "UpdateBucket"
	methodLockRetention      = "LockBucketRetentionPolicy"
	methodGetIamPolicy       = "GetIamPolicy"
	methodSetIamPolicy       = "SetIamPolicy"
	methodTestIamPermissions = "TestIamPermissions"
	methodRewriteObject      = "RewriteObject"
)

// unary receives a raw unary call's request and decodes it with decode.
func unary(ss grpc.ServerStream, name string, decode func(field) error) error {
	msg, err := recvRaw(ss)
	if err != nil {
		return err
	}
	if err := eachField(msg, decode); err != nil {
		return status.Errorf(codes.InvalidArgument, "fakes: %sRequest does not decode: %v", name, err)
	}
	return nil
}

// bucketNamed returns the bucket a resource name ("projects/_/buckets/B")
// names, and records it for the call.
func (s *Server) bucketNamed(ctx context.Context, res string) (*store.Bucket, error) {
	name, err := api.ParseBucket(res)
	if err != nil {
		return nil, err
	}
	calls.NoteTarget(ctx, name, "")
	return s.Store.Bucket(name)
}

// bucketConds reads the metageneration preconditions of a bucket request,
// fields 2 and 3 of Get, Delete and UpdateBucketRequest.
func bucketConds(f field, c **store.Conditions) bool {
	if f.typ != protowire.VarintType || f.num != 2 && f.num != 3 {
		return false
	}
	if *c == nil {
		*c = &store.Conditions{}
	}
	if f.num == 2 {
		(*c).MetaMatch = int64Ptr(f.v)
	} else {
		(*c).MetaNotMatch = int64Ptr(f.v)
	}
	return true
}

// grpcGetBucket serves GetBucket: name (1), the metageneration
// preconditions (2, 3); read_mask is ignored (every field is returned).
func (s *Server) grpcGetBucket(ss grpc.ServerStream) error {
	b, err := s.bucketRequest(ss, methodGetBucket)
	if err != nil {
		return err
	}
	a := b.Attrs()
	return sendRaw(ss, appendBucket(nil, b, a))
}

// bucketRequest reads a request that names a bucket (1) under
// metageneration preconditions (2, 3), as GetBucket and DeleteBucket do,
// and returns the bucket once the preconditions hold.
func (s *Server) bucketRequest(ss grpc.ServerStream, method string) (*store.Bucket, error) {
	var name string
	var cond *store.Conditions
	if err := unary(ss, method, func(f field) error {
		if f.num == 1 && f.typ == protowire.BytesType {
			name = string(f.b)
		}
		bucketConds(f, &cond)
		return nil
	}); err != nil {
		return nil, err
	}
	b, err := s.bucketNamed(ss.Context(), name)
	if err != nil {
		return nil, err
	}
	if err := store.CheckBucket(cond, b.Attrs().Metageneration); err != nil {
		return nil, err
	}
	return b, nil
}

// grpcCreateBucket serves CreateBucket: parent (1, "projects/P"), bucket
// (2: storage_class, versioning, labels, retention_policy,
// default_event_based_hold, acl, default_object_acl), bucket_id (3),
// predefined_acl (6) and predefined_default_object_acl (7).
func (s *Server) grpcCreateBucket(ss grpc.ServerStream) error {
	var parent, id string
	var pb protoBucket
	q := map[string]string{}
	if err := unary(ss, methodCreateBucket, func(f field) error {
		switch {
		case f.typ != protowire.BytesType:
		case f.num == 1:
			parent = string(f.b)
		case f.num == 2:
			return pb.decode(f.b)
		case f.num == 3:
			id = string(f.b)
		case f.num == 6:
			q["predefinedAcl"] = string(f.b)
		case f.num == 7:
			q["predefinedDefaultObjectAcl"] = string(f.b)
		}
		return nil
	}); err != nil {
		return err
	}
	if !strings.HasPrefix(parent, "projects/") {
		return status.Errorf(codes.InvalidArgument, "fakes: CreateBucketRequest.parent %q is not projects/PROJECT", parent)
	}
	calls.NoteTarget(ss.Context(), id, "")
	a := store.BucketAttrs{ACL: store.DefaultBucketACL(), DefaultObjectACL: store.DefaultObjectACL()}
	paths := []string{"storage_class", "versioning", "labels", "default_event_based_hold"}
	if pb.retention != nil {
		paths = append(paths, "retention_policy")
	}
	if len(pb.acl) > 0 {
		paths = append(paths, "acl")
	}
	if len(pb.defaultACL) > 0 {
		paths = append(paths, "default_object_acl")
	}
	if err := pb.apply(&a, paths, q); err != nil {
		return err
	}
	b, err := s.Store.CreateBucketAttrs(id, a, false)
	if err != nil {
		if e, ok := err.(*store.Error); ok && e.Kind == store.KindConflict {
			return status.Error(codes.AlreadyExists, e.Msg)
		}
		return err
	}
	return sendRaw(ss, appendBucket(nil, b, b.Attrs()))
}

// grpcDeleteBucket serves DeleteBucket: name (1) and the metageneration
// preconditions (2, 3); only an empty bucket can go.
func (s *Server) grpcDeleteBucket(ss grpc.ServerStream) error {
	b, err := s.bucketRequest(ss, methodDeleteBucket)
	if err != nil {
		return err
	}
	if err := s.Store.DeleteBucket(b.Name()); err != nil {
		return err
	}
	return sendRaw(ss, nil)
}

// grpcListBuckets serves ListBuckets: parent (1), page_size (2),
// page_token (3) and prefix (4); every bucket belongs to the one project.
func (s *Server) grpcListBuckets(ss grpc.ServerStream) error {
	var parent, token, prefix string
	var size int64
	if err := unary(ss, methodListBuckets, func(f field) error {
		switch {
		case f.num == 2 && f.typ == protowire.VarintType:
			size = int64(f.v)
		case f.typ != protowire.BytesType:
		case f.num == 1:
			parent = string(f.b)
		case f.num == 3:
			token = string(f.b)
		case f.num == 4:
			prefix = string(f.b)
		}
		return nil
	}); err != nil {
		return err
	}
	if !strings.HasPrefix(parent, "projects/") {
		return status.Errorf(codes.InvalidArgument, "fakes: ListBucketsRequest.parent %q is not projects/PROJECT", parent)
	}
	if size <= 0 || size > core.MaxPageSize {
		size = core.MaxPageSize
	}
	after := ""
	if token != "" {
		name, _, ok := store.ParsePageToken(token)
		if !ok {
			return status.Errorf(codes.InvalidArgument, "fakes: page token %q is not one this server issued", token)
		}
		after = name
	}
	bs, more := s.Store.ListBuckets(prefix, after, int(size))
	var out []byte
	for _, b := range bs {
		out = protowire.AppendTag(out, 1, protowire.BytesType)
		out = protowire.AppendBytes(out, appendBucket(nil, b, b.Attrs()))
	}
	if more {
		out = appendBytesField(out, 2, []byte(store.PageToken(bs[len(bs)-1].Name(), 0)))
	}
	return sendRaw(ss, out)
}

// grpcUpdateBucket serves UpdateBucket: bucket (1, which names the bucket
// and holds the new values), the metageneration preconditions (2, 3),
// update_mask (6: storage_class, versioning, labels and labels.KEY,
// retention_policy, default_event_based_hold, acl, default_object_acl,
// or "*" for all of them; others are codes.Unimplemented, output-only
// ones ignored), predefined_acl (8) and predefined_default_object_acl
// (9). It bumps the metageneration, as buckets.patch does.
func (s *Server) grpcUpdateBucket(ss grpc.ServerStream) error {
	var pb protoBucket
	var cond *store.Conditions
	var paths []string
	q := map[string]string{}
	if err := unary(ss, methodUpdateBucket, func(f field) error {
		switch {
		case bucketConds(f, &cond), f.typ != protowire.BytesType:
		case f.num == 1:
			return pb.decode(f.b)
		case f.num == 6:
			return eachField(f.b, func(f field) error {
				if f.num == 1 && f.typ == protowire.BytesType {
					paths = append(paths, string(f.b))
				}
				return nil
			})
		case f.num == 8:
			q["predefinedAcl"] = string(f.b)
		case f.num == 9:
			q["predefinedDefaultObjectAcl"] = string(f.b)
		}
		return nil
	}); err != nil {
		return err
	}
	b, err := s.bucketNamed(ss.Context(), pb.name)
	if err != nil {
		return err
	}
	if len(paths) == 0 && len(q) == 0 {
		return status.Error(codes.InvalidArgument, "fakes: UpdateBucketRequest.update_mask is required")
	}
	a, err := b.UpdateAttrs(cond, func(a *store.BucketAttrs) error { return pb.apply(a, paths, q) })
	if err != nil {
		return err
	}
	return sendRaw(ss, appendBucket(nil, b, a))
}

// grpcLockRetention serves LockBucketRetentionPolicy: bucket (1) and
// if_metageneration_match (2, required), as buckets.lockRetentionPolicy.
func (s *Server) grpcLockRetention(ss grpc.ServerStream) error {
	var name string
	var cond *store.Conditions
	if err := unary(ss, methodLockRetention, func(f field) error {
		if f.num == 1 && f.typ == protowire.BytesType {
			name = string(f.b)
		}
		bucketConds(f, &cond)
		return nil
	}); err != nil {
		return err
	}
	if cond == nil || cond.MetaMatch == nil {
		return status.Error(codes.InvalidArgument, "fakes: LockBucketRetentionPolicyRequest.if_metageneration_match is required")
	}
	b, err := s.bucketNamed(ss.Context(), name)
	if err != nil {
		return err
	}
	a := b.Attrs()
	if err := store.CheckBucket(cond, a.Metageneration); err != nil {
		return err
	}
	if a.Retention != nil && !a.Retention.Locked {
		if a, err = b.UpdateAttrs(cond, func(a *store.BucketAttrs) error {
			if a.Retention != nil {
				a.Retention.Locked = true
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return sendRaw(ss, appendBucket(nil, b, a))
}

// iamResource reads the resource (1) of an IAM request: a bucket.
func (s *Server) iamBucket(ss grpc.ServerStream, res string) (*store.Bucket, error) {
	if strings.Contains(strings.TrimPrefix(res, api.BucketPrefix), "/") {
		return nil, status.Errorf(codes.InvalidArgument, "fakes: IAM policies are the fake's on buckets, not %q", res)
	}
	return s.bucketNamed(ss.Context(), res)
}

// grpcGetIamPolicy serves GetIamPolicy (google.iam.v1): resource (1).
func (s *Server) grpcGetIamPolicy(ss grpc.ServerStream) error {
	var res string
	if err := unary(ss, methodGetIamPolicy, func(f field) error {
		if f.num == 1 && f.typ == protowire.BytesType {
			res = string(f.b)
		}
		return nil
	}); err != nil {
		return err
	}
	b, err := s.iamBucket(ss, res)
	if err != nil {
		return err
	}
	p, err := b.Policy()
	if err != nil {
		return err
	}
	return sendRaw(ss, appendPolicy(nil, p))
}

// grpcSetIamPolicy serves SetIamPolicy: resource (1) and policy (2:
// version 1, bindings 4 of role 1, members 2 and condition 3, etag 3,
// which, if set, must be the policy's).
func (s *Server) grpcSetIamPolicy(ss grpc.ServerStream) error {
	var res, etag string
	var p store.Policy
	if err := unary(ss, methodSetIamPolicy, func(f field) error {
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			res = string(f.b)
		case f.num == 2 && f.typ == protowire.BytesType:
			return eachField(f.b, func(f field) error {
				switch {
				case f.num == 1 && f.typ == protowire.VarintType:
					p.Version = int64(int32(f.v))
				case f.num == 3 && f.typ == protowire.BytesType:
					etag = string(f.b)
				case f.num == 4 && f.typ == protowire.BytesType:
					bd, err := decodeBinding(f.b)
					if err == nil && len(bd.Members) > 0 {
						p.Bindings = append(p.Bindings, bd)
					}
					return err
				}
				return nil
			})
		}
		return nil
	}); err != nil {
		return err
	}
	if p.Version < 0 || p.Version > 3 {
		return status.Errorf(codes.InvalidArgument, "fakes: policy version %d is not 1 to 3", p.Version)
	}
	b, err := s.iamBucket(ss, res)
	if err != nil {
		return err
	}
	out, err := b.SetPolicy(p, etag)
	if err != nil {
		if e, ok := err.(*store.Error); ok && e.Kind == store.KindPrecondition {
			return status.Error(codes.Aborted, e.Msg) // IAM's code for a stale etag
		}
		return err
	}
	return sendRaw(ss, appendPolicy(nil, out))
}

// grpcTestIamPermissions serves TestIamPermissions: resource (1) and
// permissions (2); every storage permission asked for is granted, but to
// a caller held to a role (granted).
func (s *Server) grpcTestIamPermissions(ss grpc.ServerStream) error {
	var res string
	var perms []string
	if err := unary(ss, methodTestIamPermissions, func(f field) error {
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			res = string(f.b)
		case f.num == 2 && f.typ == protowire.BytesType:
			perms = append(perms, string(f.b))
		}
		return nil
	}); err != nil {
		return err
	}
	for _, p := range perms {
		if !strings.HasPrefix(p, "storage.") {
			return status.Errorf(codes.InvalidArgument, "fakes: permission %q is not a storage permission", p)
		}
	}
	if _, err := s.iamBucket(ss, res); err != nil {
		return err
	}
	var out []byte
	for _, p := range core.Granted(ss.Context(), perms) {
		out = appendBytesField(out, 1, []byte(p))
	}
	return sendRaw(ss, out)
}

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

// appendPolicy appends the encoding of p, a google.iam.v1.Policy:
// version 1, etag 3, bindings 4 (role 1, members 2, condition 3, a
// google.type.Expr: expression 1, title 2, description 3, location 4).
func appendPolicy(out []byte, p *store.Policy) []byte {
	out = appendVarintField(out, 1, uint64(p.Version))
	out = appendBytesField(out, 3, []byte(p.Etag))
	for _, bd := range p.Bindings {
		var m []byte
		m = appendBytesField(m, 1, []byte(bd.Role))
		for _, mem := range bd.Members {
			m = appendBytesField(m, 2, []byte(mem))
		}
		if bd.Condition != "" {
			var c struct{ Expression, Title, Description, Location string }
			json.Unmarshal([]byte(bd.Condition), &c)
			var e []byte
			for i, v := range []string{c.Expression, c.Title, c.Description, c.Location} {
				if v != "" {
					e = appendBytesField(e, protowire.Number(i+1), []byte(v))
				}
			}
			m = protowire.AppendTag(m, 3, protowire.BytesType)
			m = protowire.AppendBytes(m, e)
		}
		out = protowire.AppendTag(out, 4, protowire.BytesType)
		out = protowire.AppendBytes(out, m)
	}
	return out
}

// decodeBinding reads an encoded google.iam.v1.Binding.
func decodeBinding(b []byte) (store.Binding, error) {
	var bd store.Binding
	err := eachField(b, func(f field) error {
		switch {
		case f.typ != protowire.BytesType:
		case f.num == 1:
			bd.Role = string(f.b)
		case f.num == 2:
			bd.Members = append(bd.Members, string(f.b))
		case f.num == 3:
			var c [4]string
			if err := eachField(f.b, func(f field) error {
				if f.num >= 1 && f.num <= 4 && f.typ == protowire.BytesType {
					c[f.num-1] = string(f.b)
				}
				return nil
			}); err != nil {
				return err
			}
			raw, _ := json.Marshal(map[string]string{"expression": c[0], "title": c[1], "description": c[2], "location": c[3]})
			bd.Condition = string(raw)
		}
		return nil
	})
	if err == nil && bd.Role == "" {
		err = status.Error(codes.InvalidArgument, "fakes: a policy binding needs a role")
	}
	return bd, err
}
