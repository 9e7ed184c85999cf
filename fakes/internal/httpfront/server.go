// Package httpfront is the fake's HTTP front: the JSON API (route.go
// routes a request to its method's handler), its uploads, and the XML
// API (xml*.go), served by the core (internal/core) under the per-call
// layer (internal/calls: log, fault rules, roles, retry tests). It never
// imports the gRPC front.
package httpfront

import (
	"github.com/objup/objup/fakes/internal/calls"
	"github.com/objup/objup/fakes/internal/core"
)

// Server serves the JSON and XML APIs of one fake.
type Server struct {
	*core.Core
	*calls.Layer
	// GRPCAddr is the gRPC front's address, which GET /start_grpc
	// answers with.
	GRPCAddr string
}

// New returns the HTTP front of c under l.
func New(c *core.Core, l *calls.Layer, grpcAddr string) *Server {
	return &Server{Core: c, Layer: l, GRPCAddr: grpcAddr}
}
