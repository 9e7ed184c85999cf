package grpcfront

import (
	"context"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/internal/wire"
)

// rpc is one method of the storage v2 service the fake serves: its one
// entry in rpcs, from which the server's grpc.ServiceDesc, the request
// log's names, the fault rules' method names and the retry test's hooks
// all come. See the README's Layout: a new gRPC method.
type rpc struct {
	// name is the method's name: its gRPC name under google.storage.v2.Storage,
	// the name Call.Method records, and the name the fault rules take.
	Name string
	// retry is the retry test API's method whose instructions the calls
	// consume (see package retrytest), "" for none.
	Retry string
	// faults says the fault rules (FailCall, Delay, ...) take the method:
	// those with an exported Method name.
	Faults bool

	// Exactly one of unary and stream serves the method.
	//
	// unary serves a unary method whose messages are internal/wire's
	// (unaryRPC).
	unary grpc.MethodHandler
	// stream serves a streaming method, or a method served raw, from the
	// protobuf encoding of its messages (recvRaw, sendRaw), whatever its
	// kind: such a method is a stream both ways as grpc-go sees it.
	stream func(*Server, grpc.ServerStream) error
	// clientStreams and serverStreams are the directions of a stream of
	// internal/wire's messages; a raw method is both (raw).
	clientStreams, serverStreams bool
}

// raw returns the rpc entry of a method served from its protobuf encoding.
func raw(name, retry string, faults bool, serve func(*Server, grpc.ServerStream) error) rpc {
	return rpc{Name: name, Retry: retry, Faults: faults, stream: serve, clientStreams: true, serverStreams: true}
}

// rpcs are the methods the fake serves, one entry each.
var RPCs = []rpc{
	{Name: MethodWriteObject, Retry: "storage.objects.insert", Faults: true, clientStreams: true,
		stream: func(s *Server, ss grpc.ServerStream) error {
			return s.svc.WriteObject(&grpc.GenericServerStream[wire.WriteObjectRequest, wire.WriteObjectResponse]{ServerStream: ss})
		}},
	{Name: MethodBidiWriteObject, Retry: "storage.objects.insert", Faults: true, clientStreams: true, serverStreams: true,
		stream: func(s *Server, ss grpc.ServerStream) error {
			return s.svc.BidiWriteObject(&grpc.GenericServerStream[wire.BidiWriteObjectRequest, wire.BidiWriteObjectResponse]{ServerStream: ss})
		}},
	{Name: MethodStartResumableWrite, Retry: "storage.objects.insert", Faults: true,
		unary: unaryRPC(MethodStartResumableWrite, (*Service).StartResumableWrite)},
	{Name: MethodQueryWriteStatus, Faults: true,
		unary: unaryRPC(MethodQueryWriteStatus, (*Service).QueryWriteStatus)},
	{Name: MethodReadObject, Retry: "storage.objects.get", Faults: true, serverStreams: true,
		stream: func(s *Server, ss grpc.ServerStream) error {
			m := new(wire.ReadObjectRequest)
			if err := ss.RecvMsg(m); err != nil {
				return err
			}
			return s.svc.ReadObject(m, &grpc.GenericServerStream[wire.ReadObjectRequest, wire.ReadObjectResponse]{ServerStream: ss})
		}},
	raw(MethodBidiReadObject, "storage.objects.get", true, (*Server).bidiReadObject),
	{Name: MethodGetObject, Retry: "storage.objects.get", Faults: true,
		unary: unaryRPC(MethodGetObject, (*Service).GetObject)},
	{Name: MethodListObjects, Retry: "storage.objects.list", Faults: true,
		unary: unaryRPC(MethodListObjects, (*Service).ListObjects)},
	{Name: MethodDeleteObject, Retry: "storage.objects.delete", Faults: true,
		unary: unaryRPC(MethodDeleteObject, (*Service).DeleteObject)},
	raw(MethodUpdateObject, "storage.objects.patch", true, (*Server).grpcUpdateObject),
	{Name: MethodComposeObject, Retry: "storage.objects.compose", Faults: true,
		unary: unaryRPC(MethodComposeObject, (*Service).ComposeObject)},
	raw(MethodCancelResumableWrite, "", false, (*Server).grpcCancelResumableWrite),
	raw(methodRewriteObject, "storage.objects.rewrite", false, (*Server).grpcRewriteObject),
	raw(methodGetBucket, "storage.buckets.get", false, (*Server).grpcGetBucket),
	raw(methodCreateBucket, "storage.buckets.insert", false, (*Server).grpcCreateBucket),
	raw(methodDeleteBucket, "storage.buckets.delete", false, (*Server).grpcDeleteBucket),
	raw(methodListBuckets, "storage.buckets.list", false, (*Server).grpcListBuckets),
	raw(methodUpdateBucket, "storage.buckets.patch", false, (*Server).grpcUpdateBucket),
	raw(methodLockRetention, "storage.buckets.lockRetentionPolicy", false, (*Server).grpcLockRetention),
	raw(methodGetIamPolicy, "storage.buckets.getIamPolicy", false, (*Server).grpcGetIamPolicy),
	raw(methodSetIamPolicy, "storage.buckets.setIamPolicy", false, (*Server).grpcSetIamPolicy),
	raw(methodTestIamPermissions, "storage.buckets.testIamPermissions", false, (*Server).grpcTestIamPermissions),
}

// rpcNamed indexes rpcs by name.
var RPCNamed = func() map[string]*rpc {
	m := make(map[string]*rpc, len(RPCs))
	for i := range RPCs {
		r := &RPCs[i]
		if m[r.Name] != nil || (r.unary == nil) == (r.stream == nil) {
			panic("fakes: rpcs: method " + r.Name + " is listed twice, or has no handler or two")
		}
		m[r.Name] = r
	}
	return m
}()

// serviceDesc is the service the gRPC server registers: every entry of
// rpcs, served by the *Server it is registered with.
var ServiceDesc = func() grpc.ServiceDesc {
	d := grpc.ServiceDesc{
		ServiceName: wire.ServiceName,
		HandlerType: (*any)(nil),
		Metadata:    "google/storage/v2/storage.proto",
	}
	for _, r := range RPCs {
		if r.unary != nil {
			d.Methods = append(d.Methods, grpc.MethodDesc{MethodName: r.Name, Handler: r.unary})
			continue
		}
		serve := r.stream
		d.Streams = append(d.Streams, grpc.StreamDesc{
			StreamName:    r.Name,
			Handler:       func(srv any, ss grpc.ServerStream) error { return serve(srv.(*Server), ss) },
			ClientStreams: r.clientStreams,
			ServerStreams: r.serverStreams,
		})
	}
	return d
}()

// unaryRPC returns the handler of unary method name, whose request and
// response are internal/wire's messages, served by call.
func unaryRPC[Req, Resp any](name string, call func(*Service, context.Context, *Req) (*Resp, error)) grpc.MethodHandler {
	full := "/" + wire.ServiceName + "/" + name
	return func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		in := new(Req)
		if err := dec(in); err != nil {
			return nil, err
		}
		v := &srv.(*Server).svc
		if interceptor == nil {
			return call(v, ctx, in)
		}
		info := &grpc.UnaryServerInfo{Server: srv, FullMethod: full}
		return interceptor(ctx, in, info, func(ctx context.Context, req any) (any, error) {
			return call(v, ctx, req.(*Req))
		})
	}
}

// serveUnknown is the gRPC server's handler of the methods not in rpcs.
func (s *Server) ServeUnknown(_ any, ss grpc.ServerStream) error {
	full, _ := grpc.MethodFromServerStream(ss)
	return status.Errorf(codes.Unimplemented, "fakes: method %s is not implemented by the fake", full)
}

// shortMethod turns "/google.storage.v2.Storage/WriteObject" into
// "WriteObject".
func ShortMethod(full string) string {
	return full[strings.LastIndexByte(full, '/')+1:]
}
