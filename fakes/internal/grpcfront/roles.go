package grpcfront

import (
	"context"

	"github.com/objup/objup/fakes/internal/core"
	"google.golang.org/grpc/metadata"
)

// withRole returns ctx with the role of the gRPC request it carries, if
// the server knows its token.
func (s *Server) withRole(ctx context.Context) context.Context {
	if s.Creds == nil {
		return ctx
	}
	v := metadata.ValueFromIncomingContext(ctx, "authorization")
	if len(v) == 0 {
		return ctx
	}
	if r, ok := s.RoleOf(v[len(v)-1]); ok {
		return context.WithValue(ctx, core.RoleKey{}, r)
	}
	return ctx
}

// grpcPerms are the permissions each gRPC method needs before its
// handler runs. The write methods are checked by their first message (a
// write_object_spec or append_object_spec needs storage.objects.create,
// an upload_id nothing: see checkWrite); QueryWriteStatus and
// TestIamPermissions need nothing; a method not listed needs the bucket
// permissions no object role grants.
var grpcPerms = map[string]core.Perm{
	MethodWriteObject:          0,
	MethodBidiWriteObject:      0,
	MethodStartResumableWrite:  0,
	MethodQueryWriteStatus:     0,
	MethodCancelResumableWrite: 0,
	MethodReadObject:           core.PermGet,
	MethodBidiReadObject:       core.PermGet,
	MethodGetObject:            core.PermGet,
	MethodListObjects:          core.PermList,
	MethodDeleteObject:         core.PermDelete,
	MethodUpdateObject:         core.PermUpdate,
	MethodComposeObject:        core.PermCreate | core.PermGet,
	methodRewriteObject:        core.PermCreate | core.PermGet,
	methodTestIamPermissions:   0,
}

// authorizeGRPC returns ctx with the role of the gRPC call of method, and
// GCS's refusal if the role does not allow the method.
func (s *Server) authorizeGRPC(ctx context.Context, method string) (context.Context, error) {
	if s.Creds == nil {
		return ctx, nil
	}
	ctx = s.withRole(ctx)
	p, ok := grpcPerms[method]
	if !ok {
		p = core.PermBucket
	}
	return ctx, core.Need(ctx, p)
}
