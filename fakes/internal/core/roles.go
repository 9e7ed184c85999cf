package core

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/objup/objup/fakes/internal/store"
)

// Roles, enforced by credential.
//
// A server given credentials ([WithCredential]) reads the bearer token of
// each request (the authorization metadata over gRPC, the Authorization
// header over HTTP: "Bearer TOKEN"). A request whose token it knows is
// held to that token's role; any other request, with no token or one the
// server does not know, keeps full access, as on a server without
// credentials.
//
// What each method needs is what GCS documents: the IAM Permissions
// section of each method of google/storage/v2/storage.proto (WriteObject
// and StartResumableWrite need storage.objects.create; GetObject,
// ReadObject and BidiReadObject storage.objects.get; ListObjects
// storage.objects.list; DeleteObject storage.objects.delete; UpdateObject
// storage.objects.update; ComposeObject storage.objects.create and
// storage.objects.get, and storage.objects.delete if it overwrites), and
// the JSON API's methods likewise; the XML API's methods need what the
// XML methods table of the Cloud Storage docs (IAM permissions for XML
// methods) lists: GET of a bucket storage.objects.list, PUT of an object
// storage.objects.create, the initiate,
// a part's upload and the complete of a multipart upload
// storage.multipartUploads.create and storage.objects.create, its abort
// storage.multipartUploads.abort, its list of parts
// storage.multipartUploads.listParts, and the list of a bucket's uploads
// storage.multipartUploads.list. Overwriting an object needs
// storage.objects.delete besides storage.objects.create ("This permission
// is only required for uploads that overwrite an existing object",
// Cloud Storage docs, Perform resumable uploads, Required permissions);
// GCS then answers 403 "Caller does not have storage.objects.delete
// access to the Google Cloud Storage object." (as reported for an
// objectCreator in google-github-actions/upload-cloud-storage#388).
//
// The requests of a resumable session after its start are not checked:
// over JSON the session URI is itself the credential (Cloud Storage docs,
// Resumable uploads, Session URIs: requests to it need no authentication,
// which is how a session is handed to a browser that holds no
// credentials), and storage.proto gives QueryWriteStatus,
// CancelResumableWrite and a write that names an upload_id no IAM
// permission of their own. The session keeps the role of the request that
// started it, for the overwrite check at its end.

// Role is one of Cloud Storage's predefined IAM roles on objects, held by
// a credential of [WithCredential]. The zero Role grants nothing and is
// not valid.
type Role int

const (
	// RoleObjectViewer is roles/storage.objectViewer: storage.objects.get
	// and storage.objects.list.
	RoleObjectViewer Role = iota + 1
	// RoleObjectCreator is roles/storage.objectCreator, an uploader's
	// usual role: storage.objects.create, and of the XML API's multipart
	// uploads storage.multipartUploads.create, abort and listParts (not
	// list). It cannot read, list or delete objects, nor overwrite one
	// (which needs storage.objects.delete).
	RoleObjectCreator
	// RoleObjectUser is roles/storage.objectUser: storage.objects.create,
	// delete, get, list and update, without the IAM permissions on
	// objects (their ACLs), and storage.multipartUploads.*.
	RoleObjectUser
	// RoleObjectAdmin is roles/storage.objectAdmin: storage.objects.* and
	// storage.multipartUploads.*.
	RoleObjectAdmin
)

// perm is a set of storage permissions.
type Perm uint16

// permMPU is storage.multipartUploads.*.
const permMPU = PermMPUCreate | PermMPUAbort | PermMPUListParts | PermMPUList

const (
	PermGet          Perm = 1 << iota // storage.objects.get
	PermList                          // storage.objects.list
	PermCreate                        // storage.objects.create
	PermDelete                        // storage.objects.delete
	PermUpdate                        // storage.objects.update
	PermGetIAM                        // storage.objects.getIamPolicy
	PermSetIAM                        // storage.objects.setIamPolicy
	PermBucket                        // the bucket and project permissions: no object role grants them
	PermMPUCreate                     // storage.multipartUploads.create
	PermMPUAbort                      // storage.multipartUploads.abort
	PermMPUListParts                  // storage.multipartUploads.listParts
	PermMPUList                       // storage.multipartUploads.list
)

// permNames names each permission, in the order of the bits.
var permNames = [...]struct{ name, resource string }{
	{"storage.objects.get", "object"},
	{"storage.objects.list", "bucket"},
	{"storage.objects.create", "object"},
	{"storage.objects.delete", "object"},
	{"storage.objects.update", "object"},
	{"storage.objects.getIamPolicy", "object"},
	{"storage.objects.setIamPolicy", "object"},
	{"storage.buckets.get", "bucket"},
	{"storage.multipartUploads.create", "object"},
	{"storage.multipartUploads.abort", "object"},
	{"storage.multipartUploads.listParts", "object"},
	{"storage.multipartUploads.list", "bucket"},
}

var roleNames = [...]string{
	RoleObjectViewer:  "roles/storage.objectViewer",
	RoleObjectCreator: "roles/storage.objectCreator",
	RoleObjectUser:    "roles/storage.objectUser",
	RoleObjectAdmin:   "roles/storage.objectAdmin",
}

// String returns the role's IAM name, such as
// "roles/storage.objectCreator".
func (r Role) String() string {
	if r.Valid() {
		return roleNames[r]
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

func (r Role) Valid() bool { return r >= RoleObjectViewer && r <= RoleObjectAdmin }

// perms returns the permissions r grants.
func (r Role) perms() Perm {
	switch r {
	case RoleObjectViewer:
		return PermGet | PermList
	case RoleObjectCreator:
		return PermCreate | PermMPUCreate | PermMPUAbort | PermMPUListParts
	case RoleObjectUser:
		return PermGet | PermList | PermCreate | PermDelete | PermUpdate | permMPU
	case RoleObjectAdmin:
		return PermGet | PermList | PermCreate | PermDelete | PermUpdate | PermGetIAM | PermSetIAM | permMPU
	}
	return 0
}

// Permissions returns the storage permissions on objects that r grants
// and the fake enforces, such as "storage.objects.create".
func (r Role) Permissions() []string {
	var out []string
	for i, p := range permNames {
		if r.perms()&(1<<i) != 0 {
			out = append(out, p.name)
		}
	}
	return out
}

// ParseRole returns the role named s: its IAM name
// ("roles/storage.objectCreator") or that name's last part
// ("objectCreator").
func ParseRole(s string) (Role, error) {
	for r := RoleObjectViewer; r <= RoleObjectAdmin; r++ {
		if s == roleNames[r] || s == strings.TrimPrefix(roleNames[r], "roles/storage.") {
			return r, nil
		}
	}
	return 0, fmt.Errorf("fakes: unknown role %q (want objectViewer, objectCreator, objectUser or objectAdmin)", s)
}

type RoleKey struct{}

// roleFrom returns the role the request of ctx is held to, if any.
func roleFrom(ctx context.Context) (Role, bool) {
	if ctx == nil {
		return 0, false
	}
	r, ok := ctx.Value(RoleKey{}).(Role)
	return r, ok
}

// need returns GCS's refusal if the request of ctx is held to a role
// without every permission of p, else nil.
func Need(ctx context.Context, p Perm) error {
	r, ok := roleFrom(ctx)
	if !ok {
		return nil
	}
	if missing := p &^ r.perms(); missing != 0 {
		for i, pn := range permNames {
			if missing&(1<<i) != 0 {
				return store.ErrPermission(pn.name, pn.resource)
			}
		}
	}
	return nil
}

// granted returns the permissions of asked that the request of ctx holds:
// all of them without a role, else those its role grants, as
// testIamPermissions answers a caller.
func Granted(ctx context.Context, asked []string) []string {
	r, ok := roleFrom(ctx)
	if !ok {
		return asked
	}
	var out []string
	have := r.Permissions()
	for _, p := range asked {
		if slices.Contains(have, p) {
			out = append(out, p)
		}
	}
	return out
}

// checkWrite returns GCS's refusal if the request of ctx may not create
// objects: the check of a write stream's first message that opens an
// object (write_object_spec, append_object_spec), and of
// StartResumableWrite.
func CheckWrite(ctx context.Context) error { return Need(ctx, PermCreate) }

// overwriteCond returns the conditions of a write by the request of ctx:
// cond, and, if its role lacks storage.objects.delete, the condition that
// it replaces no live object (checked after the others, so a write with
// ifGenerationMatch=0 to an existing name fails that precondition first:
// HTTP 412, codes.FailedPrecondition). cond is not modified.
func OverwriteCond(ctx context.Context, cond *store.Conditions) *store.Conditions {
	r, ok := roleFrom(ctx)
	if !ok || r.perms()&PermDelete != 0 {
		return cond
	}
	c := store.Conditions{NoOverwrite: true}
	if cond != nil {
		c = *cond
		c.NoOverwrite = true
	}
	return &c
}
