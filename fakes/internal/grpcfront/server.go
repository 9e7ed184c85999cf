// Package grpcfront is the fake's storage v2 gRPC front: the methods of
// google.storage.v2.Storage (rpcs.go lists them, one entry each), read
// from their messages, served by the core (internal/core) under the
// per-call layer (internal/calls: log, fault rules, roles, retry tests).
// It never imports the JSON/XML front.
package grpcfront

import (
	"google.golang.org/grpc"

	"github.com/objup/objup/fakes/internal/calls"
	"github.com/objup/objup/fakes/internal/core"
)

// Server serves the gRPC API of one fake.
type Server struct {
	*core.Core
	*calls.Layer
	svc Service // the handlers of rpcs
}

// New returns the gRPC front of c under l.
func New(c *core.Core, l *calls.Layer) *Server {
	s := &Server{Core: c, Layer: l}
	s.svc.S = s
	return s
}

// Options are the grpc.Server options the front needs: its interceptors
// (the per-call layer) and the answer to an unknown service.
func (s *Server) Options() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(s.UnaryInterceptor),
		grpc.ChainStreamInterceptor(s.StreamInterceptor),
		grpc.UnknownServiceHandler(s.ServeUnknown),
	}
}

// Register registers the storage v2 service on g.
func (s *Server) Register(g *grpc.Server) { g.RegisterService(&ServiceDesc, s) }
