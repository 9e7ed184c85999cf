package fakes_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/internal/wire"
)

// outcome is how a request under a role ends.
type outcome int

const (
	allowed outcome = iota // served
	denied                 // 403 forbidden, codes.PermissionDenied: nothing done
	precond                // 412, codes.FailedPrecondition
)

func (o outcome) String() string { return [...]string{"allowed", "denied", "precondition failed"}[o] }

// grpcOutcome classifies a gRPC call's error.
func grpcOutcome(t *testing.T, err error) outcome {
	t.Helper()
	switch status.Code(err) {
	case codes.OK:
		return allowed
	case codes.PermissionDenied:
		if !strings.Contains(status.Convert(err).Message(), "does not have storage.") {
			t.Errorf("PermissionDenied without GCS's message: %v", err)
		}
		return denied
	case codes.FailedPrecondition:
		return precond
	}
	t.Fatalf("unexpected error %v", err)
	return 0
}

// jsonOutcome classifies a JSON API reply, checking the body of a refusal.
func jsonOutcome(t *testing.T, r *reply) outcome {
	t.Helper()
	switch {
	case r.status == http.StatusForbidden:
		reason, msg := r.errorReason(t, http.StatusForbidden)
		if reason != "forbidden" || !strings.Contains(msg, "does not have storage.") {
			t.Errorf("403 with reason %q, message %q", reason, msg)
		}
		return denied
	case r.status == http.StatusPreconditionFailed:
		return precond
	case r.status < 300 || r.status == http.StatusPermanentRedirect:
		return allowed
	}
	t.Fatalf("unexpected reply %d %s", r.status, r.body)
	return 0
}

// withToken returns ctx carrying "authorization: Bearer token" if token is
// not empty.
func withToken(ctx context.Context, token string) context.Context {
	if token == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// auth is the HTTP header pair of token, for do.
func auth(token string) []string {
	if token == "" {
		return nil
	}
	return []string{"Authorization", "Bearer " + token}
}

// roleOp is one request made under a token. Its names are its own: name
// is an object of its own, "existing" (and "existing-2" for composes) is
// stored before it runs.
type roleOp struct {
	name string
	run  func(t *testing.T, srv *fakes.Server, cc *grpc.ClientConn, token, name string) outcome
}

var roleOps = []roleOp{
	{"grpc WriteObject new", func(t *testing.T, _ *fakes.Server, cc *grpc.ClientConn, tok, name string) outcome {
		_, err := writeObject(withToken(ctxT(t), tok), cc, chunks([]byte("new"), 2*mib, withSpec(spec(name)))...)
		return grpcOutcome(t, err)
	}},
	{"grpc WriteObject overwrite", func(t *testing.T, _ *fakes.Server, cc *grpc.ClientConn, tok, name string) outcome {
		_, err := writeObject(withToken(ctxT(t), tok), cc, chunks([]byte("new"), 2*mib, withSpec(spec(name+"/existing")))...)
		return grpcOutcome(t, err)
	}},
	{"grpc WriteObject overwrite if_generation_match=0", func(t *testing.T, _ *fakes.Server, cc *grpc.ClientConn, tok, name string) outcome {
		s := spec(name + "/existing")
		s.IfGenerationMatch = new(int64(0))
		_, err := writeObject(withToken(ctxT(t), tok), cc, chunks([]byte("new"), 2*mib, withSpec(s))...)
		return grpcOutcome(t, err)
	}},
	{"grpc resumable", func(t *testing.T, _ *fakes.Server, cc *grpc.ClientConn, tok, name string) outcome {
		ctx := withToken(ctxT(t), tok)
		var resp wire.StartResumableWriteResponse
		if err := cc.Invoke(ctx, wire.MethodStartResumableWrite, &wire.StartResumableWriteRequest{WriteObjectSpec: spec(name)}, &resp); err != nil {
			return grpcOutcome(t, err)
		}
		if _, err := queryWriteStatus(ctx, cc, resp.GetUploadId()); err != nil {
			t.Fatalf("QueryWriteStatus of the caller's own session: %v", err)
		}
		_, err := bidi(ctx, cc, bidiChunks([]byte("resumable"), 2*mib, bidiUpload(resp.GetUploadId()))...)
		return grpcOutcome(t, err)
	}},
	{"grpc session of another caller", func(t *testing.T, _ *fakes.Server, cc *grpc.ClientConn, tok, name string) outcome {
		id := startResumable(t, cc, spec(name)) // no token
		ctx := withToken(ctxT(t), tok)
		if _, err := queryWriteStatus(ctx, cc, id); err != nil {
			return grpcOutcome(t, err)
		}
		_, err := bidi(ctx, cc, bidiChunks([]byte("resumable"), 2*mib, bidiUpload(id))...)
		return grpcOutcome(t, err)
	}},
	{"grpc GetObject", func(t *testing.T, _ *fakes.Server, cc *grpc.ClientConn, tok, name string) outcome {
		_, err := getObject(withToken(ctxT(t), tok), cc, &wire.GetObjectRequest{Bucket: bucketRes, Object: name + "/existing"})
		return grpcOutcome(t, err)
	}},
	{"grpc ReadObject", func(t *testing.T, _ *fakes.Server, cc *grpc.ClientConn, tok, name string) outcome {
		_, _, err := readObject(withToken(ctxT(t), tok), cc, &wire.ReadObjectRequest{Bucket: bucketRes, Object: name + "/existing"})
		return grpcOutcome(t, err)
	}},
	{"grpc ListObjects", func(t *testing.T, _ *fakes.Server, cc *grpc.ClientConn, tok, name string) outcome {
		err := cc.Invoke(withToken(ctxT(t), tok), wire.MethodListObjects, &wire.ListObjectsRequest{Parent: bucketRes, Prefix: name}, new(wire.ListObjectsResponse))
		return grpcOutcome(t, err)
	}},
	{"grpc DeleteObject", func(t *testing.T, _ *fakes.Server, cc *grpc.ClientConn, tok, name string) outcome {
		err := cc.Invoke(withToken(ctxT(t), tok), wire.MethodDeleteObject, &wire.DeleteObjectRequest{Bucket: bucketRes, Object: name + "/existing"}, new(wire.Object))
		return grpcOutcome(t, err)
	}},
	{"grpc ComposeObject", func(t *testing.T, _ *fakes.Server, cc *grpc.ClientConn, tok, name string) outcome {
		req := &wire.ComposeObjectRequest{Destination: &wire.Object{Bucket: bucketRes, Name: name},
			SourceObjects: []*wire.ComposeObjectRequest_SourceObject{{Name: name + "/existing"}, {Name: name + "/existing-2"}}}
		return grpcOutcome(t, cc.Invoke(withToken(ctxT(t), tok), wire.MethodComposeObject, req, new(wire.Object)))
	}},
	{"json media new", func(t *testing.T, srv *fakes.Server, _ *grpc.ClientConn, tok, name string) outcome {
		return jsonOutcome(t, do(t, srv, "POST", uploadPath("media", name), []byte("new"), auth(tok)...))
	}},
	{"json media overwrite", func(t *testing.T, srv *fakes.Server, _ *grpc.ClientConn, tok, name string) outcome {
		return jsonOutcome(t, do(t, srv, "POST", uploadPath("media", name+"/existing"), []byte("new"), auth(tok)...))
	}},
	{"json media overwrite ifGenerationMatch=0", func(t *testing.T, srv *fakes.Server, _ *grpc.ClientConn, tok, name string) outcome {
		return jsonOutcome(t, do(t, srv, "POST", uploadPath("media", name+"/existing", "ifGenerationMatch=0"), []byte("new"), auth(tok)...))
	}},
	{"json resumable", func(t *testing.T, srv *fakes.Server, _ *grpc.ClientConn, tok, name string) outcome {
		r := do(t, srv, "POST", uploadPath("resumable", name), nil, auth(tok)...)
		if r.status != http.StatusOK {
			return jsonOutcome(t, r)
		}
		// The session URI is its own credential: the PUT carries none.
		return jsonOutcome(t, do(t, srv, "PUT", r.header.Get("Location"), []byte("resumable")))
	}},
	{"json session of another caller", func(t *testing.T, srv *fakes.Server, _ *grpc.ClientConn, tok, name string) outcome {
		u := startSession(t, srv, name, "") // no token
		if o := jsonOutcome(t, do(t, srv, "PUT", u, nil, append(auth(tok), "Content-Range", "bytes */*")...)); o != allowed {
			return o
		}
		return jsonOutcome(t, do(t, srv, "PUT", u, []byte("resumable"), auth(tok)...))
	}},
	{"json objects.get", func(t *testing.T, srv *fakes.Server, _ *grpc.ClientConn, tok, name string) outcome {
		return jsonOutcome(t, do(t, srv, "GET", objPath(name+"/existing")+"?alt=media", nil, auth(tok)...))
	}},
	{"json objects.list", func(t *testing.T, srv *fakes.Server, _ *grpc.ClientConn, tok, name string) outcome {
		return jsonOutcome(t, do(t, srv, "GET", "/storage/v1/b/"+bucket+"/o?prefix="+name, nil, auth(tok)...))
	}},
	{"json objects.delete", func(t *testing.T, srv *fakes.Server, _ *grpc.ClientConn, tok, name string) outcome {
		return jsonOutcome(t, do(t, srv, "DELETE", objPath(name+"/existing"), nil, auth(tok)...))
	}},
	{"json objects.patch", func(t *testing.T, srv *fakes.Server, _ *grpc.ClientConn, tok, name string) outcome {
		return jsonOutcome(t, do(t, srv, "PATCH", objPath(name+"/existing"), []byte(`{"metadata":{"k":"v"}}`), auth(tok)...))
	}},
	{"json objects.compose", func(t *testing.T, srv *fakes.Server, _ *grpc.ClientConn, tok, name string) outcome {
		body := fmt.Appendf(nil, `{"sourceObjects":[{"name":%q},{"name":%q}]}`, name+"/existing", name+"/existing-2")
		return jsonOutcome(t, do(t, srv, "POST", objPath(name)+"/compose", body, auth(tok)...))
	}},
	{"json buckets.get", func(t *testing.T, srv *fakes.Server, _ *grpc.ClientConn, tok, _ string) outcome {
		return jsonOutcome(t, do(t, srv, "GET", "/storage/v1/b/"+bucket, nil, auth(tok)...))
	}},
}

// TestRoles: each role allows what its permissions allow, over both APIs,
// and refuses the rest with 403 or PermissionDenied having done nothing; a
// request without a known token has full access. A create-only caller
// cannot overwrite (no storage.objects.delete), and with
// ifGenerationMatch=0 meets the precondition first; a resumable session's
// later requests need no permission of their own.
func TestRoles(t *testing.T) {
	srv, cc := start(t,
		fakes.WithCredential("creator", fakes.RoleObjectCreator),
		fakes.WithCredential("viewer", fakes.RoleObjectViewer),
		fakes.WithCredential("user", fakes.RoleObjectUser),
		fakes.WithCredential("admin", fakes.RoleObjectAdmin))
	A, D, P := allowed, denied, precond
	// Outcomes in the order of roleOps.
	tests := []struct {
		token string
		want  []outcome
	}{
		{"", []outcome{A, A, P, A, A, A, A, A, A, A, A, A, P, A, A, A, A, A, A, A, A}},
		{"unknown", []outcome{A, A, P, A, A, A, A, A, A, A, A, A, P, A, A, A, A, A, A, A, A}},
		{"creator", []outcome{A, D, P, A, A, D, D, D, D, D, A, D, P, A, A, D, D, D, D, D, D}},
		{"viewer", []outcome{D, D, D, D, A, A, A, A, D, D, D, D, D, D, A, A, A, D, D, D, D}},
		{"user", []outcome{A, A, P, A, A, A, A, A, A, A, A, A, P, A, A, A, A, A, A, A, D}},
		{"admin", []outcome{A, A, P, A, A, A, A, A, A, A, A, A, P, A, A, A, A, A, A, A, D}},
	}
	for _, tc := range tests {
		if len(tc.want) != len(roleOps) {
			t.Fatalf("token %q: %d outcomes for %d operations", tc.token, len(tc.want), len(roleOps))
		}
		t.Run("token="+tc.token, func(t *testing.T) {
			for i, op := range roleOps {
				t.Run(op.name, func(t *testing.T) {
					name := fmt.Sprintf("%s/%d", tc.token, i)
					for _, n := range []string{name + "/existing", name + "/existing-2"} {
						if _, err := srv.PutObject(fakes.Object{ObjectAttrs: fakes.ObjectAttrs{Bucket: bucket, Name: n}, Content: []byte("old")}); err != nil {
							t.Fatal(err)
						}
					}
					before := objectsUnder(t, srv, name)
					got := op.run(t, srv, cc, tc.token, name)
					if got != tc.want[i] {
						t.Fatalf("%v, want %v", got, tc.want[i])
					}
					if got != allowed && !slices.Equal(objectsUnder(t, srv, name), before) {
						t.Fatalf("a refused request changed the objects: %v, then %v", before, objectsUnder(t, srv, name))
					}
				})
			}
		})
	}
}

// objectsUnder lists the names and generations of the objects whose names
// start with prefix, straight from the store.
func objectsUnder(t *testing.T, srv *fakes.Server, prefix string) []string {
	t.Helper()
	objs, err := srv.ListObjects(bucket, prefix+"/")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, fmt.Sprintf("%s@%d", o.Name, o.Generation))
	}
	if _, err := srv.Object(bucket, prefix); err == nil {
		out = append(out, prefix)
	}
	return out
}

// TestRoleTestIamPermissions: testIamPermissions answers a caller held to
// a role with the permissions of its role, and anyone else with all.
func TestRoleTestIamPermissions(t *testing.T) {
	srv, _ := start(t, fakes.WithCredential("creator", fakes.RoleObjectCreator), fakes.WithCredential("viewer", fakes.RoleObjectViewer))
	q := "?permissions=storage.objects.create&permissions=storage.objects.delete&permissions=storage.objects.get"
	for _, tc := range []struct{ token, want string }{
		{"", "[storage.objects.create storage.objects.delete storage.objects.get]"},
		{"creator", "[storage.objects.create]"},
		{"viewer", "[storage.objects.get]"},
	} {
		r := do(t, srv, "GET", "/storage/v1/b/"+bucket+"/iam/testPermissions"+q, nil, auth(tc.token)...)
		var got struct{ Permissions []string }
		r.decode(t, &got)
		if fmt.Sprint(got.Permissions) != tc.want {
			t.Errorf("token %q: granted %v, want %s", tc.token, got.Permissions, tc.want)
		}
	}
}

// TestRoleNames: a role's name parses back to it, and New refuses a
// credential without a token or with an invalid role.
func TestRoleNames(t *testing.T) {
	for _, r := range []fakes.Role{fakes.RoleObjectViewer, fakes.RoleObjectCreator, fakes.RoleObjectUser, fakes.RoleObjectAdmin} {
		for _, s := range []string{r.String(), strings.TrimPrefix(r.String(), "roles/storage.")} {
			if got, err := fakes.ParseRole(s); err != nil || got != r {
				t.Errorf("ParseRole(%q) = %v, %v; want %v", s, got, err, r)
			}
		}
		if len(r.Permissions()) == 0 {
			t.Errorf("%v grants nothing", r)
		}
	}
	if p := fakes.RoleObjectCreator.Permissions(); !slices.Equal(p, []string{"storage.objects.create",
		"storage.multipartUploads.create", "storage.multipartUploads.abort", "storage.multipartUploads.listParts"}) {
		t.Errorf("objectCreator grants %v", p)
	}
	if _, err := fakes.ParseRole("owner"); err == nil {
		t.Error("ParseRole(owner) succeeded")
	}
	for _, opt := range []fakes.Option{fakes.WithCredential("", fakes.RoleObjectAdmin), fakes.WithCredential("t", 0)} {
		if srv, err := fakes.New(opt); err == nil {
			srv.Close()
			t.Error("New accepted an invalid credential")
		}
	}
}
