package fakes_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestJSONMethodRejects sends requests the new methods refuse, with the
// status GCS answers.
func TestJSONMethodRejects(t *testing.T) {
	const (
		bkt  = "/storage/v1/b/" + bucket
		obj  = bkt + "/o/obj"
		hmac = "/storage/v1/projects/p/hmacKeys"
	)
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		says                     string
	}{
		{"bucket ACL role", "POST", bkt + "/acl", `{"entity":"allUsers","role":"EDITOR"}`, 400, "EDITOR"},
		{"bucket ACL without entity", "POST", bkt + "/acl", `{"role":"READER"}`, 400, "entity"},
		{"object ACL role WRITER", "POST", obj + "/acl", `{"entity":"allUsers","role":"WRITER"}`, 400, "WRITER"},
		{"default object ACL role WRITER", "PATCH", bkt, `{"defaultObjectAcl":[{"entity":"allUsers","role":"WRITER"}]}`, 400, "WRITER"},
		{"ACL entity differs", "PUT", bkt + "/acl/allUsers", `{"entity":"allAuthenticatedUsers","role":"READER"}`, 400, "allAuthenticatedUsers"},
		{"bucket predefinedAcl", "PATCH", bkt + "?predefinedAcl=everyone", `{}`, 400, "everyone"},
		{"object predefinedAcl", "PATCH", obj + "?predefinedAcl=publicReadWrite", `{}`, 400, "publicReadWrite"},
		{"bucket body", "PATCH", bkt, `[1]`, 400, "bucket resource"},
		{"retention period", "PATCH", bkt, `{"retentionPolicy":{"retentionPeriod":"-1"}}`, 400, "retentionPeriod"},
		{"lock without ifMetagenerationMatch", "POST", bkt + "/lockRetentionPolicy", ``, 400, "ifMetagenerationMatch"},
		{"policy version", "PUT", bkt + "/iam", `{"version":4,"bindings":[]}`, 400, "version"},
		{"policy binding without role", "PUT", bkt + "/iam", `{"bindings":[{"members":["allUsers"]}]}`, 400, "role"},
		{"permission", "GET", bkt + "/iam/testPermissions?permissions=buckets.get", ``, 400, "buckets.get"},
		{"notification without topic", "POST", bkt + "/notificationConfigs", `{"payload_format":"NONE"}`, 400, "topic"},
		{"notification topic", "POST", bkt + "/notificationConfigs", `{"topic":"pubsub/t","payload_format":"NONE"}`, 400, "pubsub/t"},
		{"notification payload", "POST", bkt + "/notificationConfigs", `{"topic":"projects/p/topics/t","payload_format":"XML"}`, 400, "XML"},
		{"notification event", "POST", bkt + "/notificationConfigs", `{"topic":"projects/p/topics/t","payload_format":"NONE","event_types":["OBJECT_READ"]}`, 400, "OBJECT_READ"},
		{"HMAC key without account", "POST", hmac, ``, 400, "serviceAccountEmail"},
		{"HMAC key state", "PUT", hmac + "/{k}", `{"state":"DELETED"}`, 400, "DELETED"},
		{"active HMAC key delete", "DELETE", hmac + "/{k}", ``, 400, "ACTIVE"},
		{"copy destination", "POST", obj + "/copyTo/b/" + bucket, ``, 400, "destination"},
		{"copy to a missing bucket", "POST", obj + "/copyTo/b/missing/o/x", ``, 404, "missing"},
		{"rewrite step", "POST", obj + "/rewriteTo/b/" + bucket + "/o/x?maxBytesRewrittenPerCall=1000", ``, 400, "maxBytesRewrittenPerCall"},
		{"rewrite token", "POST", obj + "/rewriteTo/b/" + bucket + "/o/x?rewriteToken=abc", ``, 400, "rewriteToken"},
		{"copy of a KMS key", "POST", obj + "/copyTo/b/" + bucket + "/o/x", `{"kmsKeyName":"k"}`, 501, "kmsKeyName"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, cc := start(t)
			do(t, srv, "POST", uploadPath("media", "obj"), []byte("object"))
			var k struct{ Metadata struct{ AccessID string } }
			do(t, srv, "POST", hmac+"?serviceAccountEmail=sa@example.com", nil).decode(t, &k)
			path := strings.ReplaceAll(tc.path, "{k}", k.Metadata.AccessID)
			r, err := send(t, srv, tc.method, path, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if _, msg := r.errorReason(t, tc.status); !strings.Contains(msg, tc.says) {
				t.Fatalf("message %q does not say %q", msg, tc.says)
			}
			absent(t, cc, "x")
		})
	}
}

// bucketJSON is the part of the bucket resource the tests read.
type bucketJSON struct {
	Metageneration, StorageClass, Etag string
	Labels                             map[string]string
	Versioning                         *struct{ Enabled bool }
	RetentionPolicy                    *struct {
		RetentionPeriod string
		IsLocked        bool
	}
	ACL, DefaultObjectACL []struct{ Entity, Role string }
	Website               map[string]string
	Cors                  []map[string]any
}

func TestJSONBucketPatchAndUpdate(t *testing.T) {
	srv, _ := start(t)
	b := "/storage/v1/b/" + bucket
	get := func() bucketJSON {
		var out bucketJSON
		do(t, srv, "GET", b, nil).decode(t, &out)
		return out
	}
	if g := get(); g.Metageneration != "1" || g.Etag != "CAE=" || len(g.ACL) != 3 || len(g.DefaultObjectACL) != 3 {
		t.Fatalf("new bucket: %+v", g)
	}

	// Patch merges labels and keeps the fields it does not name, and
	// what the fake does not read comes back as given.
	do(t, srv, "PATCH", b, []byte(`{"labels":{"a":"1","b":"2"},"website":{"mainPageSuffix":"index.html"},"cors":[{"maxAgeSeconds":60}]}`))
	var p bucketJSON
	do(t, srv, "PATCH", b+"?ifMetagenerationMatch=2", []byte(`{"labels":{"a":null,"c":"3"},"versioning":{"enabled":true}}`)).decode(t, &p)
	if p.Metageneration != "3" || p.Etag != "CAM=" || fmt.Sprint(p.Labels) != "map[b:2 c:3]" || p.Website["mainPageSuffix"] != "index.html" ||
		len(p.Cors) != 1 || p.Versioning == nil || !p.Versioning.Enabled || p.StorageClass != "STANDARD" {
		t.Fatalf("after patches: %+v", p)
	}
	// Versioning set by a patch keeps noncurrent generations.
	do(t, srv, "POST", uploadPath("media", "v"), []byte("one"))
	do(t, srv, "POST", uploadPath("media", "v"), []byte("two"))
	var l jsonList
	do(t, srv, "GET", "/storage/v1/b/"+bucket+"/o?versions=true", nil).decode(t, &l)
	if len(l.Items) != 2 {
		t.Fatalf("versions listed: %+v", l.Items)
	}
	// Update replaces: what is absent is cleared, but the ACLs.
	var u bucketJSON
	do(t, srv, "PUT", b, []byte(`{"storageClass":"NEARLINE","labels":{"z":"9"}}`)).decode(t, &u)
	if u.Metageneration != "4" || u.StorageClass != "NEARLINE" || fmt.Sprint(u.Labels) != "map[z:9]" || u.Website != nil ||
		u.Versioning != nil || len(u.ACL) != 3 {
		t.Fatalf("after update: %+v", u)
	}
	// predefinedAcl and predefinedDefaultObjectAcl replace the ACLs; a
	// body ACL comes first.
	var a bucketJSON
	do(t, srv, "PATCH", b+"?predefinedAcl=publicRead&predefinedDefaultObjectAcl=private", []byte(`{"acl":[]}`)).decode(t, &a)
	if fmt.Sprint(a.ACL) != "[{project-owners-0 OWNER} {allUsers READER}]" || len(a.DefaultObjectACL) != 0 {
		t.Fatalf("after predefined ACLs: %+v", a)
	}

	// A retention policy: locked, it can be lengthened, not shortened
	// nor removed.
	do(t, srv, "PATCH", b, []byte(`{"retentionPolicy":{"retentionPeriod":100}}`))
	var locked bucketJSON
	do(t, srv, "POST", b+"/lockRetentionPolicy?ifMetagenerationMatch=6", nil).decode(t, &locked)
	if locked.RetentionPolicy == nil || !locked.RetentionPolicy.IsLocked || locked.RetentionPolicy.RetentionPeriod != "100" || locked.Metageneration != "7" {
		t.Fatalf("locked: %+v", locked)
	}
	do(t, srv, "PATCH", b, []byte(`{"retentionPolicy":{"retentionPeriod":"50"}}`)).errorReason(t, http.StatusForbidden)
	do(t, srv, "PATCH", b, []byte(`{"retentionPolicy":null}`)).errorReason(t, http.StatusForbidden)
	do(t, srv, "PUT", b, []byte(`{}`)).errorReason(t, http.StatusForbidden)
	do(t, srv, "PATCH", b, []byte(`{"retentionPolicy":{"retentionPeriod":"200"}}`)).decode(t, &locked)
	if locked.RetentionPolicy.RetentionPeriod != "200" || !locked.RetentionPolicy.IsLocked {
		t.Fatalf("lengthened: %+v", locked)
	}
	// Locking again changes nothing; objects are not held back.
	do(t, srv, "POST", b+"/lockRetentionPolicy?ifMetagenerationMatch=8", nil).decode(t, &locked)
	if locked.Metageneration != "8" {
		t.Fatalf("locked again: %+v", locked)
	}
	do(t, srv, "DELETE", objPath("v"), nil)

	// A bucket without a policy has nothing to lock: it is answered as it
	// is, as the testbench does.
	var nb bucketJSON
	do(t, srv, "POST", "/storage/v1/b?project=p", []byte(`{"name":"other","storageClass":"COLDLINE","labels":{"x":"y"}}`), "Content-Type", "application/json").decode(t, &nb)
	if nb.StorageClass != "COLDLINE" || nb.Labels["x"] != "y" || nb.Metageneration != "1" {
		t.Fatalf("created: %+v", nb)
	}
	do(t, srv, "POST", "/storage/v1/b/other/lockRetentionPolicy?ifMetagenerationMatch=1", nil).decode(t, &nb)
	if nb.Metageneration != "1" || nb.RetentionPolicy != nil {
		t.Fatalf("lock without a policy: %+v", nb)
	}
}

func TestJSONBucketInsertACLs(t *testing.T) {
	srv, _ := start(t)
	var b bucketJSON
	do(t, srv, "POST", "/storage/v1/b?project=p&predefinedAcl=private&predefinedDefaultObjectAcl=publicRead",
		[]byte(`{"name":"acls","versioning":{"enabled":true}}`)).decode(t, &b)
	if fmt.Sprint(b.ACL) != "[{project-owners-0 OWNER}]" || fmt.Sprint(b.DefaultObjectACL) != "[{allUsers READER}]" || b.Versioning == nil {
		t.Fatalf("created: %+v", b)
	}
	do(t, srv, "POST", "/storage/v1/b?project=p", []byte(`{"name":"acls2","acl":[{"entity":"allUsers","role":"WRITER"}]}`)).decode(t, &b)
	if fmt.Sprint(b.ACL) != "[{allUsers WRITER}]" {
		t.Fatalf("created with an ACL: %+v", b)
	}
	do(t, srv, "GET", "/storage/v1/b/acls?ifMetagenerationMatch=2", nil).errorReason(t, 412)
	if r := do(t, srv, "GET", "/storage/v1/b/acls?ifMetagenerationNotMatch=1", nil); r.status != 304 {
		t.Fatalf("ifMetagenerationNotMatch: %d", r.status)
	}
	do(t, srv, "DELETE", "/storage/v1/b/acls?ifMetagenerationMatch=2", nil).errorReason(t, 412)
	if r := do(t, srv, "DELETE", "/storage/v1/b/acls?ifMetagenerationMatch=1", nil); r.status != 204 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
}

func TestJSONRewriteSteps(t *testing.T) {
	srv, cc := start(t)
	data := payload(3*mib+5, 21)
	body, ctype := multipartBody(t, `{"name":"src","metadata":{"m":"1"},"contentType":"text/x","acl":[{"entity":"allUsers","role":"READER"}]}`, "text/x", data)
	do(t, srv, "POST", uploadPath("multipart", ""), body, "Content-Type", ctype)
	path := objPath("src") + "/rewriteTo/b/" + bucket + "/o/dst?maxBytesRewrittenPerCall=1048576&ifGenerationMatch=0"
	token := ""
	var calls int
	for {
		calls++
		p := path
		if token != "" {
			p += "&rewriteToken=" + token
		}
		var rr struct {
			Kind, TotalBytesRewritten, ObjectSize, RewriteToken string
			Done                                                bool
			Resource                                            *jsonObject
		}
		do(t, srv, "POST", p, []byte(`{"cacheControl":"no-store"}`)).decode(t, &rr)
		if rr.Kind != "storage#rewriteResponse" || rr.ObjectSize != fmt.Sprint(len(data)) {
			t.Fatalf("call %d: %+v", calls, rr)
		}
		if rr.Done {
			checkResource(t, *rr.Resource, "dst", data)
			if rr.Resource.Metadata["m"] != "1" || rr.Resource.ContentType != "text/x" || rr.Resource.CacheControl != "no-store" {
				t.Fatalf("resource %+v", rr.Resource)
			}
			break
		}
		if want := fmt.Sprint(calls * mib); rr.TotalBytesRewritten != want || rr.RewriteToken == "" {
			t.Fatalf("call %d: %+v, want %s bytes and a token", calls, rr, want)
		}
		absent(t, cc, "dst")
		token = rr.RewriteToken
	}
	if calls != 4 {
		t.Fatalf("%d calls, want 4", calls)
	}
	media(t, srv, "dst", data)
	// The copy has no ACL of its own.
	var acl struct{ Items []any }
	do(t, srv, "GET", objPath("dst")+"/acl", nil).decode(t, &acl)
	if len(acl.Items) != 0 {
		t.Fatalf("copied ACL: %+v", acl)
	}
	// A token is for its own rewrite only.
	do(t, srv, "POST", objPath("src")+"/rewriteTo/b/"+bucket+"/o/other?rewriteToken="+token, nil).errorReason(t, 400)
	// Without maxBytesRewrittenPerCall a rewrite is one call; a copy
	// always is, into another bucket too.
	do(t, srv, "POST", "/storage/v1/b?project=p", []byte(`{"name":"second","storageClass":"ARCHIVE"}`))
	var o jsonObject
	do(t, srv, "POST", objPath("src")+"/copyTo/b/second/o/"+strings.ReplaceAll("a/b", "/", "%2F"), nil).decode(t, &o)
	if o.Bucket != "second" || o.Name != "a/b" || o.StorageClass != "ARCHIVE" || o.Size != fmt.Sprint(len(data)) || o.Metadata["m"] != "1" {
		t.Fatalf("copy: %+v", o)
	}
	var rr struct {
		Done     bool
		Resource jsonObject
	}
	do(t, srv, "POST", objPath("src")+"/rewriteTo/b/"+bucket+"/o/one", []byte(`{}`)).decode(t, &rr)
	if !rr.Done || rr.Resource.Size != fmt.Sprint(len(data)) {
		t.Fatalf("one-call rewrite: %+v", rr)
	}
	sameBytes(t, "rewritten", get(t, cc, "one"), data)
}

func TestJSONHMACKeysAndIAM(t *testing.T) {
	srv, _ := start(t)
	h := "/storage/v1/projects/p/hmacKeys"
	var ids []string
	for _, sa := range []string{"a@example.com", "a@example.com", "b@example.com"} {
		var k struct {
			Secret   string
			Metadata struct{ AccessID, ServiceAccountEmail, ProjectID string }
		}
		do(t, srv, "POST", h+"?serviceAccountEmail="+sa, nil).decode(t, &k)
		if len(k.Metadata.AccessID) != 61 || k.Secret == "" || k.Metadata.ServiceAccountEmail != sa || k.Metadata.ProjectID != "p" {
			t.Fatalf("created %+v", k)
		}
		ids = append(ids, k.Metadata.AccessID)
	}
	list := func(q string) (items []string, next string) {
		var l struct {
			Items         []struct{ AccessID string }
			NextPageToken string
		}
		do(t, srv, "GET", h+"?"+q, nil).decode(t, &l)
		for _, k := range l.Items {
			items = append(items, k.AccessID)
		}
		return items, l.NextPageToken
	}
	if got, _ := list("serviceAccountEmail=a@example.com"); len(got) != 2 {
		t.Fatalf("keys of a: %v", got)
	}
	first, next := list("maxResults=2")
	rest, end := list("maxResults=2&pageToken=" + next)
	if len(first) != 2 || next == "" || len(rest) != 1 || end != "" {
		t.Fatalf("pages %v %q %v %q", first, next, rest, end)
	}
	// Deactivated, a key can be deleted, and is gone.
	do(t, srv, "PUT", h+"/"+ids[0], []byte(`{"state":"INACTIVE"}`))
	if r := do(t, srv, "DELETE", h+"/"+ids[0], nil); r.status != 204 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	do(t, srv, "GET", h+"/"+ids[0], nil).errorReason(t, 404)

	// IAM: each set gets a new etag, and a stale one fails.
	iam := "/storage/v1/b/" + bucket + "/iam"
	var p struct {
		Etag     string
		Bindings []struct {
			Role    string
			Members []string
		}
	}
	do(t, srv, "PUT", iam, []byte(`{"bindings":[{"role":"roles/storage.admin","members":["user:a@example.com"]},{"role":"roles/x","members":[]}]}`)).decode(t, &p)
	if p.Etag != "CAI=" || len(p.Bindings) != 1 {
		t.Fatalf("set: %+v", p)
	}
	do(t, srv, "PUT", iam, []byte(`{"bindings":[],"etag":"CAE="}`)).errorReason(t, 412)
	do(t, srv, "GET", iam, nil).decode(t, &p)
	if p.Etag != "CAI=" || p.Bindings[0].Members[0] != "user:a@example.com" {
		t.Fatalf("get: %+v", p)
	}
	var perms map[string]any
	do(t, srv, "GET", iam+"/testPermissions", nil).decode(t, &perms)
	if _, ok := perms["permissions"]; ok {
		t.Fatalf("no permissions asked, some granted: %v", perms)
	}
}

// TestRetryTestConformanceMethods creates a retry test for every method
// name of the conformance suites' data over HTTP, and checks which the
// fake refuses over gRPC: the ACL, notification, HMAC key and service
// account methods, which storage v2 does not have (the testbench refuses
// them too), and buckets.update.
func TestRetryTestConformanceMethods(t *testing.T) {
	srv, _ := start(t)
	var names []string
	for _, res := range []string{"bucket_acl", "default_object_acl", "object_acl"} {
		for _, verb := range []string{"delete", "get", "insert", "list", "patch", "update"} {
			names = append(names, "storage."+res+"."+verb)
		}
	}
	for _, verb := range []string{"delete", "get", "getIamPolicy", "insert", "list", "lockRetentionPolicy", "patch", "setIamPolicy", "testIamPermissions", "update"} {
		names = append(names, "storage.buckets."+verb)
	}
	for _, verb := range []string{"create", "delete", "get", "list", "update"} {
		names = append(names, "storage.hmacKey."+verb)
	}
	for _, verb := range []string{"delete", "get", "insert", "list"} {
		names = append(names, "storage.notifications."+verb)
	}
	for _, verb := range []string{"compose", "copy", "delete", "get", "insert", "list", "patch", "rewrite", "update"} {
		names = append(names, "storage.objects."+verb)
	}
	names = append(names, "storage.serviceaccount.get")
	grpc := map[string]bool{"storage.objects.compose": true, "storage.objects.delete": true, "storage.objects.get": true,
		"storage.objects.insert": true, "storage.objects.list": true, "storage.objects.patch": true, "storage.objects.rewrite": true}
	for _, verb := range []string{"delete", "get", "getIamPolicy", "insert", "list", "lockRetentionPolicy", "patch", "setIamPolicy", "testIamPermissions"} {
		grpc["storage.buckets."+verb] = true
	}
	for _, name := range names {
		body, _ := json.Marshal(map[string]any{"instructions": map[string][]string{name: {"return-503", "return-reset-connection"}}})
		if r := do(t, srv, "POST", "/retry_test", body); r.status != 200 {
			t.Errorf("%s over HTTP: %d %s", name, r.status, r.body)
		}
		body, _ = json.Marshal(map[string]any{"instructions": map[string][]string{name: {"return-503"}}, "transport": "GRPC"})
		if r := do(t, srv, "POST", "/retry_test", body); (r.status == 200) != grpc[name] {
			t.Errorf("%s over gRPC: %d %s", name, r.status, r.body)
		}
	}
}
