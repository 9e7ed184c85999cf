package fakes

import (
	"github.com/objup/objup/fakes/internal/calls"
	"github.com/objup/objup/fakes/internal/core"
	"github.com/objup/objup/fakes/internal/grpcfront"
)

// Short names of the gRPC methods, as [Call.Method] reports them and the
// fault rules take them.
const (
	MethodWriteObject          = "WriteObject"
	MethodBidiWriteObject      = "BidiWriteObject"
	MethodStartResumableWrite  = "StartResumableWrite"
	MethodQueryWriteStatus     = "QueryWriteStatus"
	MethodCancelResumableWrite = "CancelResumableWrite"
	MethodReadObject           = "ReadObject"
	MethodBidiReadObject       = "BidiReadObject"
	MethodGetObject            = "GetObject"
	MethodListObjects          = "ListObjects"
	MethodDeleteObject         = "DeleteObject"
	MethodUpdateObject         = "UpdateObject"
	MethodComposeObject        = "ComposeObject"
)

// Call is one call as the request log ([Server.Calls]) records it: a gRPC
// call, or a request to the JSON or XML API. Its fields:
//   - Method: the short gRPC method name, e.g. "BidiWriteObject", or the
//     JSON API method, e.g. "objects.insert", or the XML API method, e.g.
//     "xml.multipart.uploadPart" (docs/fake lists them);
//   - Tenant: the last value of the x-scope-orgid request metadata (HTTP
//     header), or "";
//   - Bucket, Object: the bare bucket name and the object name, when the
//     call got far enough to name them ("" otherwise; Object is "" for
//     listings and bucket calls);
//   - Code: the status the call ended with; over HTTP, the gRPC code that
//     matches its HTTP status.
type Call = calls.Call

// CallCount is how many calls of one Method, from one Tenant, ended with
// one Code: Count ([Server.CallCounts]).
type CallCount = calls.CallCount

// ConnStats is one gRPC connection's calls, as [Server.Conns] reports
// them: Remote, the client's address; Active, the calls in flight; Peak,
// the most at once; Calls, every call; Open, whether the connection is
// still open.
type ConnStats = grpcfront.ConnStats

// Role is one of Cloud Storage's predefined IAM roles on objects, held by
// a credential of [WithCredential]. The zero Role grants nothing and is
// not valid. Its String method gives the role's IAM name, such as
// "roles/storage.objectCreator", and Permissions the storage permissions
// it grants that the fake enforces, such as "storage.objects.create".
type Role = core.Role

// The roles.
const (
	// RoleObjectViewer is roles/storage.objectViewer: storage.objects.get
	// and storage.objects.list.
	RoleObjectViewer = core.RoleObjectViewer
	// RoleObjectCreator is roles/storage.objectCreator, an uploader's
	// usual role: storage.objects.create, and of the XML API's multipart
	// uploads storage.multipartUploads.create, abort and listParts (not
	// list). It cannot read, list or delete objects, nor overwrite one
	// (which needs storage.objects.delete).
	RoleObjectCreator = core.RoleObjectCreator
	// RoleObjectUser is roles/storage.objectUser: storage.objects.create,
	// delete, get, list and update, without the IAM permissions on
	// objects (their ACLs), and storage.multipartUploads.*.
	RoleObjectUser = core.RoleObjectUser
	// RoleObjectAdmin is roles/storage.objectAdmin: storage.objects.* and
	// storage.multipartUploads.*.
	RoleObjectAdmin = core.RoleObjectAdmin
)

// ParseRole returns the role named s: its IAM name
// ("roles/storage.objectCreator") or that name's last part
// ("objectCreator").
func ParseRole(s string) (Role, error) { return core.ParseRole(s) }
