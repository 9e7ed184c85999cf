package grpcfront

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
)

// grpcCancelResumableWrite serves CancelResumableWrite: upload_id (1).
func (s *Server) grpcCancelResumableWrite(ss grpc.ServerStream) error {
	var id string
	if err := unary(ss, MethodCancelResumableWrite, func(f field) error {
		if f.num == 1 && f.typ == protowire.BytesType {
			id = string(f.b)
		}
		return nil
	}); err != nil {
		return err
	}
	up, err := s.Session(ss.Context(), id)
	if err != nil {
		return err
	}
	up.Mu.Lock()
	if up.Gone {
		up.Mu.Unlock()
		return status.Errorf(codes.NotFound, "upload %q not found", id)
	}
	s.CancelSession(up)
	up.Mu.Unlock()
	return sendRaw(ss, nil) // CancelResumableWriteResponse: empty
}
