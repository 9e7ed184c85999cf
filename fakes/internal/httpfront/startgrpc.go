package httpfront

import (
	"net"
	"net/http"

	"github.com/objup/objup/fakes/internal/store"
)

// startGRPCPath is the storage testbench's request to start its gRPC
// server on a port, which test suites send before they use gRPC.
const startGRPCPath = "/start_grpc"

// serveStartGRPC answers GET /start_grpc?port=N as the testbench does once
// its gRPC server listens: 200 and the port. The fake's gRPC server
// listens from the start, on the port it was given (fakegcs -grpc): a
// request for another port is refused (400), as nothing will listen
// there.
func (s *Server) serveStartGRPC(w http.ResponseWriter, r *http.Request) {
	rt := &HTTPRoute{}
	_, port, _ := net.SplitHostPort(s.GRPCAddr)
	if want := r.URL.Query().Get("port"); want != "" && want != port {
		WriteError(w, rt, store.Errorf(store.KindInvalid, "fakes: the gRPC server listens on %s, not on port %s: start the fake with that port (fakegcs -grpc 127.0.0.1:%s)", s.GRPCAddr, want, want))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte(port))
}
