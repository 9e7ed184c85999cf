package grpcfront

// service holds the handlers of the RPCs on internal/wire's messages (see
// rpcs), keeping them off the Server's public API.
type Service struct {
	S *Server
}
