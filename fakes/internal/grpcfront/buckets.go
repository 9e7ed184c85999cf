package grpcfront

import (
	"context"
	"strings"

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
// rewrite.go), on the
// store the JSON API's bucket methods use. Their messages are not in
// internal/wire: they are served raw (see rpcs.go and raw.go), and
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
