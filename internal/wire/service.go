package wire

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// ServiceName is the gRPC service of the GCS API.
const ServiceName = "google.storage.v2.Storage"

// Full method names, as they travel on the wire.
const (
	MethodWriteObject         = "/" + ServiceName + "/WriteObject"
	MethodBidiWriteObject     = "/" + ServiceName + "/BidiWriteObject"
	MethodStartResumableWrite = "/" + ServiceName + "/StartResumableWrite"
	MethodQueryWriteStatus    = "/" + ServiceName + "/QueryWriteStatus"
	// MethodCancelResumableWrite ends a resumable session: once it
	// succeeded, nothing of the session can be finalized.
	MethodCancelResumableWrite = "/" + ServiceName + "/CancelResumableWrite"
	MethodReadObject           = "/" + ServiceName + "/ReadObject"
	MethodGetObject            = "/" + ServiceName + "/GetObject"
	MethodListObjects          = "/" + ServiceName + "/ListObjects"
	MethodDeleteObject         = "/" + ServiceName + "/DeleteObject"
	MethodComposeObject        = "/" + ServiceName + "/ComposeObject"
)

// Stream descriptors for the streaming methods, for grpc.ClientConn.NewStream.
var (
	WriteObjectStream     = grpc.StreamDesc{StreamName: "WriteObject", ClientStreams: true}
	BidiWriteObjectStream = grpc.StreamDesc{StreamName: "BidiWriteObject", ClientStreams: true, ServerStreams: true}
	ReadObjectStream      = grpc.StreamDesc{StreamName: "ReadObject", ServerStreams: true}
)

// NewWriteObjectStream opens a WriteObject client stream on cc.
func NewWriteObjectStream(ctx context.Context, cc grpc.ClientConnInterface, opts ...grpc.CallOption) (grpc.ClientStreamingClient[WriteObjectRequest, WriteObjectResponse], error) {
	s, err := cc.NewStream(ctx, &WriteObjectStream, MethodWriteObject, opts...)
	if err != nil {
		return nil, err
	}
	return &grpc.GenericClientStream[WriteObjectRequest, WriteObjectResponse]{ClientStream: s}, nil
}

// NewBidiWriteObjectStream opens a BidiWriteObject stream on cc.
func NewBidiWriteObjectStream(ctx context.Context, cc grpc.ClientConnInterface, opts ...grpc.CallOption) (grpc.BidiStreamingClient[BidiWriteObjectRequest, BidiWriteObjectResponse], error) {
	s, err := cc.NewStream(ctx, &BidiWriteObjectStream, MethodBidiWriteObject, opts...)
	if err != nil {
		return nil, err
	}
	return &grpc.GenericClientStream[BidiWriteObjectRequest, BidiWriteObjectResponse]{ClientStream: s}, nil
}

// StorageServer is the server side of the methods this package describes. Embed
// UnimplementedStorageServer to get UNIMPLEMENTED for the methods left out.
type StorageServer interface {
	WriteObject(grpc.ClientStreamingServer[WriteObjectRequest, WriteObjectResponse]) error
	BidiWriteObject(grpc.BidiStreamingServer[BidiWriteObjectRequest, BidiWriteObjectResponse]) error
	StartResumableWrite(context.Context, *StartResumableWriteRequest) (*StartResumableWriteResponse, error)
	QueryWriteStatus(context.Context, *QueryWriteStatusRequest) (*QueryWriteStatusResponse, error)
	ReadObject(*ReadObjectRequest, grpc.ServerStreamingServer[ReadObjectResponse]) error
	GetObject(context.Context, *GetObjectRequest) (*Object, error)
	ListObjects(context.Context, *ListObjectsRequest) (*ListObjectsResponse, error)
	DeleteObject(context.Context, *DeleteObjectRequest) (*emptypb.Empty, error)
	ComposeObject(context.Context, *ComposeObjectRequest) (*Object, error)
}

// UnimplementedStorageServer answers every method with codes.Unimplemented.
type UnimplementedStorageServer struct{}

func unimplemented(m string) error {
	return status.Errorf(codes.Unimplemented, "method %s not implemented", m)
}

// WriteObject implements StorageServer.
func (UnimplementedStorageServer) WriteObject(grpc.ClientStreamingServer[WriteObjectRequest, WriteObjectResponse]) error {
	return unimplemented("WriteObject")
}

// BidiWriteObject implements StorageServer.
func (UnimplementedStorageServer) BidiWriteObject(grpc.BidiStreamingServer[BidiWriteObjectRequest, BidiWriteObjectResponse]) error {
	return unimplemented("BidiWriteObject")
}

// StartResumableWrite implements StorageServer.
func (UnimplementedStorageServer) StartResumableWrite(context.Context, *StartResumableWriteRequest) (*StartResumableWriteResponse, error) {
	return nil, unimplemented("StartResumableWrite")
}

// QueryWriteStatus implements StorageServer.
func (UnimplementedStorageServer) QueryWriteStatus(context.Context, *QueryWriteStatusRequest) (*QueryWriteStatusResponse, error) {
	return nil, unimplemented("QueryWriteStatus")
}

// ReadObject implements StorageServer.
func (UnimplementedStorageServer) ReadObject(*ReadObjectRequest, grpc.ServerStreamingServer[ReadObjectResponse]) error {
	return unimplemented("ReadObject")
}

// GetObject implements StorageServer.
func (UnimplementedStorageServer) GetObject(context.Context, *GetObjectRequest) (*Object, error) {
	return nil, unimplemented("GetObject")
}

// ListObjects implements StorageServer.
func (UnimplementedStorageServer) ListObjects(context.Context, *ListObjectsRequest) (*ListObjectsResponse, error) {
	return nil, unimplemented("ListObjects")
}

// DeleteObject implements StorageServer.
func (UnimplementedStorageServer) DeleteObject(context.Context, *DeleteObjectRequest) (*emptypb.Empty, error) {
	return nil, unimplemented("DeleteObject")
}

// ComposeObject answers codes.Unimplemented.
func (UnimplementedStorageServer) ComposeObject(context.Context, *ComposeObjectRequest) (*Object, error) {
	return nil, unimplemented("ComposeObject")
}

// RegisterStorageServer registers srv under the real service name.
func RegisterStorageServer(s grpc.ServiceRegistrar, srv StorageServer) {
	s.RegisterService(&StorageServiceDesc, srv)
}

func unaryHandler[Req any, Resp any](name string, call func(StorageServer, context.Context, *Req) (*Resp, error)) grpc.MethodHandler {
	full := "/" + ServiceName + "/" + name
	return func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		in := new(Req)
		if err := dec(in); err != nil {
			return nil, err
		}
		if interceptor == nil {
			return call(srv.(StorageServer), ctx, in)
		}
		info := &grpc.UnaryServerInfo{Server: srv, FullMethod: full}
		return interceptor(ctx, in, info, func(ctx context.Context, req any) (any, error) {
			return call(srv.(StorageServer), ctx, req.(*Req))
		})
	}
}

// StorageServiceDesc is the grpc.ServiceDesc of StorageServer.
var StorageServiceDesc = grpc.ServiceDesc{
	ServiceName: ServiceName,
	HandlerType: (*StorageServer)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "StartResumableWrite", Handler: unaryHandler("StartResumableWrite", StorageServer.StartResumableWrite)},
		{MethodName: "QueryWriteStatus", Handler: unaryHandler("QueryWriteStatus", StorageServer.QueryWriteStatus)},
		{MethodName: "GetObject", Handler: unaryHandler("GetObject", StorageServer.GetObject)},
		{MethodName: "ListObjects", Handler: unaryHandler("ListObjects", StorageServer.ListObjects)},
		{MethodName: "DeleteObject", Handler: unaryHandler("DeleteObject", StorageServer.DeleteObject)},
		{MethodName: "ComposeObject", Handler: unaryHandler("ComposeObject", StorageServer.ComposeObject)},
	},
	Streams: []grpc.StreamDesc{
		{
			StreamName: "WriteObject",
			Handler: func(srv any, stream grpc.ServerStream) error {
				return srv.(StorageServer).WriteObject(&grpc.GenericServerStream[WriteObjectRequest, WriteObjectResponse]{ServerStream: stream})
			},
			ClientStreams: true,
		},
		{
			StreamName: "BidiWriteObject",
			Handler: func(srv any, stream grpc.ServerStream) error {
				return srv.(StorageServer).BidiWriteObject(&grpc.GenericServerStream[BidiWriteObjectRequest, BidiWriteObjectResponse]{ServerStream: stream})
			},
			ServerStreams: true,
			ClientStreams: true,
		},
		{
			StreamName: "ReadObject",
			Handler: func(srv any, stream grpc.ServerStream) error {
				m := new(ReadObjectRequest)
				if err := stream.RecvMsg(m); err != nil {
					return err
				}
				return srv.(StorageServer).ReadObject(m, &grpc.GenericServerStream[ReadObjectRequest, ReadObjectResponse]{ServerStream: stream})
			},
			ServerStreams: true,
		},
	},
	Metadata: "google/storage/v2/storage.proto",
}
