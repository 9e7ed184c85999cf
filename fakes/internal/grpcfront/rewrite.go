package grpcfront

import (
	"maps"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/calls"
	"github.com/objup/objup/fakes/internal/core"
	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/internal/wire"
)

// grpcRewriteObject serves RewriteObject as objects.rewrite: source_bucket
// (2), source_object (3), source_generation (4), rewrite_token (5), the
// destination's and the source's preconditions (7 to 14),
// max_bytes_rewritten_per_call (15), destination_name (24),
// destination_bucket (25), destination_predefined_acl (28), and
// destination (1), whose fields set (content_type, content_encoding,
// content_disposition, content_language, cache_control, metadata,
// storage_class) replace the source's. Encryption keys (16, 21, 22, 27)
// are codes.Unimplemented.
func (s *Server) grpcRewriteObject(ss grpc.ServerStream) error {
	req := &core.CopyRequest{Rewrite: true, Tenant: calls.TenantOf(ss.Context()), Ctx: ss.Context()}
	var srcRes, dstRes string
	var dst *wire.Object
	var common *wire.CommonObjectRequestParams
	conds := [8]*int64{} // fields 7 to 14
	keys := false
	if err := unary(ss, methodRewriteObject, func(f field) error {
		switch {
		case f.typ == protowire.VarintType && f.num >= 7 && f.num <= 14:
			conds[f.num-7] = int64Ptr(f.v)
		case f.typ == protowire.VarintType && f.num == 4:
			req.SrcGen = int64(f.v)
		case f.typ == protowire.VarintType && f.num == 15:
			req.Step = int64(f.v)
		case f.typ != protowire.BytesType:
		case f.num == 1:
			dst = &wire.Object{}
			return proto.Unmarshal(f.b, dst)
		case f.num == 2:
			srcRes = string(f.b)
		case f.num == 3:
			req.SrcName = string(f.b)
		case f.num == 5:
			req.Token = string(f.b)
		case f.num == 19:
			common = &wire.CommonObjectRequestParams{}
			return proto.Unmarshal(f.b, common)
		case f.num == 24:
			req.DstName = string(f.b)
		case f.num == 25:
			dstRes = string(f.b)
		case f.num == 28:
			req.Predefined = string(f.b)
		case f.num == 16 || f.num == 21 || f.num == 22 || f.num == 27:
			keys = keys || len(f.b) > 0
		}
		return nil
	}); err != nil {
		return err
	}
	if keys {
		return status.Error(codes.Unimplemented, "fakes: encryption keys are not supported by the fake's RewriteObject")
	}
	if err := api.CheckCommon(common); err != nil {
		return err
	}
	var err error
	if req.SrcBucket, err = api.ParseBucket(srcRes); err != nil {
		return err
	}
	if req.DstBucket, err = api.ParseBucket(dstRes); err != nil {
		return err
	}
	calls.NoteTarget(ss.Context(), req.DstBucket, req.DstName)
	req.DstCond = api.ReadConditions(conds[0], conds[1], conds[2], conds[3])
	req.SrcCond = api.ReadConditions(conds[4], conds[5], conds[6], conds[7])
	req.Edit = func(a *store.Attrs, b *store.Bucket) error {
		a.StorageClass = b.Attrs().StorageClass
		if dst == nil {
			return nil
		}
		for _, f := range []struct {
			v   string
			dst *string
		}{
			{dst.GetContentType(), &a.ContentType}, {dst.GetContentEncoding(), &a.ContentEncoding},
			{dst.GetContentDisposition(), &a.ContentDisposition}, {dst.GetContentLanguage(), &a.ContentLanguage},
			{dst.GetCacheControl(), &a.CacheControl}, {dst.GetStorageClass(), &a.StorageClass},
		} {
			if f.v != "" {
				*f.dst = f.v
			}
		}
		if md := dst.GetMetadata(); len(md) > 0 {
			a.Metadata = maps.Clone(md)
		}
		return nil
	}
	res, err := s.Copy(req)
	if err != nil {
		return err
	}
	var out []byte
	out = appendVarintField(out, 1, uint64(res.Done))
	out = appendVarintField(out, 2, uint64(res.Size))
	if res.Stored == nil {
		return sendRaw(ss, appendBytesField(out, 4, []byte(res.Token)))
	}
	out = appendVarintField(out, 3, 1)
	obj, err := proto.Marshal(core.ToObject(res.Bucket, res.Stored))
	if err != nil {
		return status.Errorf(codes.Internal, "fakes: encoding the object: %v", err)
	}
	return sendRaw(ss, appendBytesField(out, 5, obj))
}
