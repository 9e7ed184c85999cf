package grpcfront

import (
	"maps"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/core"
	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/internal/wire"
)

// updateRequest is an UpdateObjectRequest.
type updateRequest struct {
	object       *wire.Object
	genMatch     *int64
	genNotMatch  *int64
	metaMatch    *int64
	metaNotMatch *int64
	paths        []string
	predefined   string
	common       *wire.CommonObjectRequestParams
}

// parseUpdate decodes an UpdateObjectRequest: object (1), the
// preconditions (2 to 5), update_mask (7), common_object_request_params (8)
// and predefined_acl (10).
func parseUpdate(b []byte) (*updateRequest, error) {
	u := &updateRequest{}
	err := eachField(b, func(f field) error {
		switch {
		case f.typ == protowire.BytesType && f.num == 1:
			u.object = &wire.Object{}
			return proto.Unmarshal(f.b, u.object)
		case f.typ == protowire.VarintType && f.num == 2:
			u.genMatch = int64Ptr(f.v)
		case f.typ == protowire.VarintType && f.num == 3:
			u.genNotMatch = int64Ptr(f.v)
		case f.typ == protowire.VarintType && f.num == 4:
			u.metaMatch = int64Ptr(f.v)
		case f.typ == protowire.VarintType && f.num == 5:
			u.metaNotMatch = int64Ptr(f.v)
		case f.typ == protowire.BytesType && f.num == 7:
			return eachField(f.b, func(f field) error {
				if f.num == 1 && f.typ == protowire.BytesType {
					u.paths = append(u.paths, string(f.b))
				}
				return nil
			})
		case f.typ == protowire.BytesType && f.num == 8:
			u.common = &wire.CommonObjectRequestParams{}
			return proto.Unmarshal(f.b, u.common)
		case f.typ == protowire.BytesType && f.num == 10:
			u.predefined = string(f.b)
		}
		return nil
	})
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "fakes: UpdateObjectRequest does not decode: %v", err)
	}
	return u, nil
}

// outputOnly are the Object fields a client cannot set: an update mask may
// name them, and they are ignored, as AIP-161 says.
var outputOnly = map[string]bool{
	"bucket": true, "name": true, "etag": true, "generation": true, "metageneration": true,
	"size": true, "component_count": true, "checksums": true, "create_time": true,
	"update_time": true, "update_storage_class_time": true, "finalize_time": true,
	"delete_time": true, "soft_delete_time": true, "hard_delete_time": true, "owner": true,
	"storage_class": true,
}

// grpcUpdateObject serves UpdateObject, a unary call: the fields the update
// mask names are set from the request's object, which names the object
// (bucket, name and generation). The fake updates content_type,
// content_encoding, content_disposition, content_language, cache_control,
// custom_time (which cannot move back or be removed), metadata (the whole
// map) and metadata.KEY (one key, removed when the request's map lacks
// it); "*" means all of them. Output-only fields in the mask are ignored;
// any other field, and predefined_acl, is codes.Unimplemented. Like
// objects.patch, the update bumps the metageneration.
func (s *Server) grpcUpdateObject(ss grpc.ServerStream) error {
	msg, err := recvRaw(ss)
	if err != nil {
		return err
	}
	u, err := parseUpdate(msg)
	if err != nil {
		return err
	}
	in := u.object
	if in == nil {
		return status.Error(codes.InvalidArgument, "fakes: UpdateObjectRequest.object is required")
	}
	b, err := s.objectRef(ss.Context(), in.GetBucket(), in.GetName())
	if err != nil {
		return err
	}
	if err := s.admitGRPC(ss.Context(), b.Name(), in.GetName()); err != nil {
		return err
	}
	if err := api.CheckCommon(u.common); err != nil {
		return err
	}
	if u.predefined != "" {
		return status.Error(codes.Unimplemented, "fakes: predefined_acl is not supported by the fake's UpdateObject")
	}
	if len(u.paths) == 0 {
		return status.Error(codes.InvalidArgument, "fakes: UpdateObjectRequest.update_mask is required")
	}
	cond := api.ReadConditions(u.genMatch, u.genNotMatch, u.metaMatch, u.metaNotMatch)
	o, err := b.Update(in.GetName(), in.GetGeneration(), cond, func(a *store.Attrs) error {
		for _, p := range u.paths {
			if err := applyPath(a, in, p); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return ss.SendMsg(core.ToObject(b, o))
}

// updatable are the fields "*" stands for.
var updatable = []string{"content_type", "content_encoding", "content_disposition", "content_language", "cache_control", "custom_time", "metadata"}

// applyPath sets field path of a from in.
func applyPath(a *store.Attrs, in *wire.Object, path string) error {
	if key, ok := strings.CutPrefix(path, "metadata."); ok {
		if v, ok := in.GetMetadata()[key]; ok {
			if a.Metadata == nil {
				a.Metadata = make(map[string]string)
			}
			a.Metadata[key] = v
		} else {
			delete(a.Metadata, key)
		}
		return nil
	}
	switch path {
	case "*":
		for _, p := range updatable {
			if err := applyPath(a, in, p); err != nil {
				return err
			}
		}
	case "content_type":
		a.ContentType = in.GetContentType()
	case "content_encoding":
		a.ContentEncoding = in.GetContentEncoding()
	case "content_disposition":
		a.ContentDisposition = in.GetContentDisposition()
	case "content_language":
		a.ContentLanguage = in.GetContentLanguage()
	case "cache_control":
		a.CacheControl = in.GetCacheControl()
	case "metadata":
		a.Metadata = maps.Clone(in.GetMetadata())
	case "custom_time":
		ct := in.GetCustomTime()
		switch {
		case ct == nil && a.CustomTime != 0:
			return status.Error(codes.InvalidArgument, "fakes: custom_time can't be removed once set")
		case ct == nil:
		case ct.AsTime().UnixMicro() < a.CustomTime:
			return status.Error(codes.InvalidArgument, "fakes: custom_time can't be moved earlier than its current value")
		default:
			a.CustomTime = ct.AsTime().UnixMicro()
		}
	default:
		if !outputOnly[path] {
			return status.Errorf(codes.Unimplemented, "fakes: UpdateObject of %q is not supported by the fake", path)
		}
	}
	return nil
}
