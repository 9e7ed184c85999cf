package sink

import (
	"context"

	"google.golang.org/grpc"

	"github.com/objup/objup/internal/wire"
)

// The sink's gRPC service: the write methods it serves, each call
// counted.

// handler is the handler type of serviceDesc: the *Server itself.
type handler interface{ GRPCAddr() string }

// serviceDesc serves the write methods with handlers that receive
// *sinkMsg, which only sinkCodec decodes.
var serviceDesc = grpc.ServiceDesc{
	ServiceName: wire.ServiceName,
	HandlerType: (*handler)(nil),
	Methods: []grpc.MethodDesc{
		sinkMethod("StartResumableWrite", (*Server).startResumableWrite),
		sinkMethod("QueryWriteStatus", (*Server).queryWriteStatus),
		sinkMethod("ComposeObject", (*Server).composeObject),
		sinkMethod("DeleteObject", (*Server).deleteObject),
	},
	Streams: []grpc.StreamDesc{
		{
			StreamName: "WriteObject",
			Handler: func(srv any, stream grpc.ServerStream) error {
				k := srv.(*Server)
				return k.count(k.write(stream, false))
			},
			ClientStreams: true,
		},
		{
			StreamName: "BidiWriteObject",
			Handler: func(srv any, stream grpc.ServerStream) error {
				k := srv.(*Server)
				return k.count(k.write(stream, true))
			},
			ServerStreams: true,
			ClientStreams: true,
		},
	},
	Metadata: "google/storage/v2/storage.proto",
}

// sinkMethod is the description of a unary method the sink serves with
// call, which gets the call's context and the decoded request; the call is
// counted.
func sinkMethod[Req, Resp any](name string, call func(*Server, context.Context, *Req) (*Resp, error)) grpc.MethodDesc {
	return grpc.MethodDesc{MethodName: name, Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		k := srv.(*Server)
		req := new(Req)
		if err := dec(req); err != nil {
			return nil, err
		}
		resp, err := call(k, ctx, req)
		return resp, k.count(err)
	}}
}

// count counts a call that ends with err, and returns err.
func (k *Server) count(err error) error {
	if err != nil {
		k.failed.Add(1)
	}
	return err
}
