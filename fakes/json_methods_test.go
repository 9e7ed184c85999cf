package fakes_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/objup/objup/fakes"
)

// methodFixture is what every case of TestJSONMethods starts from: a server
// with the test bucket, whose retention policy is set (metageneration 2),
// the object "obj" with an ACL entry for user-a@example.com (metageneration
// 2), a notification config and an inactive HMAC key.
type methodFixture struct {
	srv       *fakes.Server
	objGen    string
	notif     string
	hmac      string
	hmacEtag  string
	bucketGen string // the bucket's metageneration
}

func newMethodFixture(t *testing.T) *methodFixture {
	t.Helper()
	srv, _ := start(t)
	f := &methodFixture{srv: srv}
	var b struct{ Metageneration string }
	do(t, srv, "PATCH", "/storage/v1/b/"+bucket, []byte(`{"retentionPolicy":{"retentionPeriod":"60"}}`)).decode(t, &b)
	f.bucketGen = b.Metageneration
	var o jsonObject
	do(t, srv, "POST", uploadPath("media", "obj"), []byte("object")).decode(t, &o)
	f.objGen = o.Generation
	if r := do(t, srv, "PATCH", objPath("obj"), []byte(`{"acl":[{"entity":"user-a@example.com","role":"OWNER"}]}`)); r.status != 200 {
		t.Fatalf("object ACL: %d %s", r.status, r.body)
	}
	var n struct{ ID string }
	do(t, srv, "POST", "/storage/v1/b/"+bucket+"/notificationConfigs", []byte(`{"topic":"projects/p/topics/t","payload_format":"JSON_API_V1"}`)).decode(t, &n)
	f.notif = n.ID
	var k struct {
		Metadata struct{ AccessID, Etag string }
	}
	do(t, srv, "POST", "/storage/v1/projects/p/hmacKeys?serviceAccountEmail=sa@example.com", nil).decode(t, &k)
	var u struct{ Etag string }
	do(t, srv, "PUT", "/storage/v1/projects/p/hmacKeys/"+k.Metadata.AccessID, []byte(`{"state":"INACTIVE"}`)).decode(t, &u)
	f.hmac, f.hmacEtag = k.Metadata.AccessID, u.Etag
	if f.bucketGen != "2" || f.notif == "" || f.hmac == "" || u.Etag == "" {
		t.Fatalf("fixture %+v", f)
	}
	return f
}

// expand replaces the fixture's placeholders in s: {b} the bucket, {bm}
// its metageneration, {g} the object's generation, {n} the notification
// config, {k} the HMAC key and {ke} its etag.
func (f *methodFixture) expand(s string) string {
	return strings.NewReplacer("{b}", bucket, "{bm}", f.bucketGen, "{g}", f.objGen, "{n}", f.notif, "{k}", f.hmac, "{ke}", f.hmacEtag).Replace(s)
}

// send sends one request on a connection of its own (so that a reset is
// seen, not retried by the transport) and returns the reply, or the error
// of a request the server cut.
func send(t *testing.T, srv *fakes.Server, method, path, body string, hdr ...string) (*reply, error) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctxT(t), method, srv.HTTPURL()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &reply{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// precondition is a variant of a request whose precondition fails: a query
// to add, or a body in place of the case's, and the status it gets.
type precondition struct {
	query, body string
	status      int
}

// TestJSONMethods calls every JSON method the conformance suites use beyond
// objects and bucket basics: once as it succeeds, on a missing resource
// (404), with each precondition failing (412, or 304 for a NotMatch), and
// under the retry test instructions return-503 and
// return-reset-connection, after which the same request succeeds.
func TestJSONMethods(t *testing.T) {
	const (
		bkt  = "/storage/v1/b/{b}"
		obj  = "/storage/v1/b/{b}/o/obj"
		hmac = "/storage/v1/projects/p/hmacKeys"
	)
	metaPre := []precondition{{query: "ifMetagenerationMatch=99", status: 412}, {query: "ifMetagenerationNotMatch={bm}", status: 304}}
	objPre := []precondition{
		{query: "ifGenerationMatch=1", status: 412}, {query: "ifMetagenerationMatch=99", status: 412},
		{query: "ifGenerationNotMatch={g}", status: 304}, {query: "ifMetagenerationNotMatch=2", status: 304},
	}
	copyPre := []precondition{
		{query: "ifGenerationMatch=1", status: 412}, {query: "ifSourceGenerationMatch=1", status: 412},
		{query: "ifSourceMetagenerationMatch=99", status: 412}, {query: "ifSourceGenerationNotMatch={g}", status: 304},
		{query: "ifSourceMetagenerationNotMatch=2", status: 304}, {query: "ifMetagenerationMatch=1", status: 412},
	}
	for _, tc := range []struct {
		name         string // the retry test method
		method, path string
		body         string
		ok           int
		missing      string // a path that names a missing resource; "": none can be missing
		pre          []precondition
		check        func(*testing.T, *methodFixture, *reply) // of the successful answer
	}{
		{"storage.buckets.patch", "PATCH", bkt, `{"storageClass":"COLDLINE","labels":{"k":"v"}}`, 200, "/storage/v1/b/missing", metaPre,
			want(`"storageClass":"COLDLINE"`, `"labels":{"k":"v"}`, `"metageneration":"3"`)},
		{"storage.buckets.update", "PUT", bkt, `{"storageClass":"NEARLINE","retentionPolicy":{"retentionPeriod":60}}`, 200, "/storage/v1/b/missing", metaPre,
			want(`"storageClass":"NEARLINE"`, `"retentionPeriod":"60"`, `"metageneration":"3"`)},
		{"storage.buckets.lockRetentionPolicy", "POST", bkt + "/lockRetentionPolicy?ifMetagenerationMatch={bm}", "", 200, "/storage/v1/b/missing/lockRetentionPolicy?ifMetagenerationMatch=1",
			[]precondition{{query: "ifMetagenerationMatch=99", status: 412}}, want(`"isLocked":true`)},
		{"storage.buckets.getIamPolicy", "GET", bkt + "/iam?optionsRequestedPolicyVersion=3", "", 200, "/storage/v1/b/missing/iam", nil,
			want(`"kind":"storage#policy"`, `roles/storage.legacyBucketOwner`, `"etag":"CAE="`)},
		{"storage.buckets.setIamPolicy", "PUT", bkt + "/iam", `{"bindings":[{"role":"roles/storage.objectViewer","members":["allUsers"]}],"etag":"CAE="}`, 200, "/storage/v1/b/missing/iam",
			[]precondition{{body: `{"bindings":[],"etag":"CAI="}`, status: 412}}, want(`roles/storage.objectViewer`, `"etag":"CAI="`)},
		{"storage.buckets.testIamPermissions", "GET", bkt + "/iam/testPermissions?permissions=storage.buckets.get&permissions=storage.objects.list", "", 200,
			"/storage/v1/b/missing/iam/testPermissions?permissions=storage.buckets.get", nil, want(`"permissions":["storage.buckets.get","storage.objects.list"]`)},

		{"storage.bucket_acl.list", "GET", bkt + "/acl", "", 200, "/storage/v1/b/missing/acl", metaPre, want(`"kind":"storage#bucketAccessControls"`, `"entity":"project-owners-0"`)},
		{"storage.bucket_acl.insert", "POST", bkt + "/acl", `{"entity":"allUsers","role":"READER"}`, 200, "/storage/v1/b/missing/acl", metaPre, want(`"entity":"allUsers"`, `"role":"READER"`)},
		{"storage.bucket_acl.get", "GET", bkt + "/acl/project-owners-0", "", 200, bkt + "/acl/user-nobody@example.com", metaPre, want(`"role":"OWNER"`)},
		{"storage.bucket_acl.update", "PUT", bkt + "/acl/project-viewers-0", `{"role":"WRITER"}`, 200, bkt + "/acl/user-nobody@example.com", metaPre, want(`"role":"WRITER"`)},
		{"storage.bucket_acl.patch", "PATCH", bkt + "/acl/project-viewers-0", `{"role":"OWNER"}`, 200, bkt + "/acl/user-nobody@example.com", metaPre, want(`"role":"OWNER"`)},
		{"storage.bucket_acl.delete", "DELETE", bkt + "/acl/project-viewers-0", "", 204, bkt + "/acl/user-nobody@example.com", metaPre, nil},

		{"storage.default_object_acl.list", "GET", bkt + "/defaultObjectAcl", "", 200, "/storage/v1/b/missing/defaultObjectAcl", metaPre, want(`"kind":"storage#objectAccessControls"`)},
		{"storage.default_object_acl.insert", "POST", bkt + "/defaultObjectAcl", `{"entity":"allUsers","role":"READER"}`, 200, "/storage/v1/b/missing/defaultObjectAcl", metaPre, want(`"entity":"allUsers"`)},
		{"storage.default_object_acl.get", "GET", bkt + "/defaultObjectAcl/project-owners-0", "", 200, bkt + "/defaultObjectAcl/allUsers", metaPre, want(`"role":"OWNER"`)},
		{"storage.default_object_acl.update", "PUT", bkt + "/defaultObjectAcl/project-viewers-0", `{"role":"OWNER"}`, 200, bkt + "/defaultObjectAcl/allUsers", metaPre, want(`"role":"OWNER"`)},
		{"storage.default_object_acl.patch", "PATCH", bkt + "/defaultObjectAcl/project-viewers-0", `{"role":"OWNER"}`, 200, bkt + "/defaultObjectAcl/allUsers", metaPre, want(`"role":"OWNER"`)},
		{"storage.default_object_acl.delete", "DELETE", bkt + "/defaultObjectAcl/project-viewers-0", "", 204, bkt + "/defaultObjectAcl/allUsers", metaPre, nil},

		{"storage.object_acl.list", "GET", obj + "/acl", "", 200, bkt + "/o/missing/acl", objPre, want(`"entity":"user-a@example.com"`, `"email":"a@example.com"`)},
		{"storage.object_acl.insert", "POST", obj + "/acl", `{"entity":"allUsers","role":"READER"}`, 200, bkt + "/o/missing/acl", objPre, want(`"entity":"allUsers"`, `"generation":"{g}"`)},
		{"storage.object_acl.get", "GET", obj + "/acl/user-a@example.com", "", 200, obj + "/acl/allUsers", objPre, want(`"role":"OWNER"`)},
		{"storage.object_acl.update", "PUT", obj + "/acl/user-a@example.com", `{"role":"READER"}`, 200, obj + "/acl/allUsers", objPre, want(`"role":"READER"`)},
		{"storage.object_acl.patch", "PATCH", obj + "/acl/user-a@example.com", `{"role":"READER"}`, 200, obj + "/acl/allUsers", objPre, want(`"role":"READER"`)},
		{"storage.object_acl.delete", "DELETE", obj + "/acl/user-a@example.com", "", 204, obj + "/acl/allUsers", objPre, nil},
		{"storage.objects.patch", "PATCH", obj + "?predefinedAcl=publicRead", `{"acl":[],"temporaryHold":true}`, 200, bkt + "/o/missing", objPre,
			want(`"entity":"allUsers"`, `"temporaryHold":true`, `"metageneration":"3"`)},

		{"storage.notifications.list", "GET", bkt + "/notificationConfigs", "", 200, "/storage/v1/b/missing/notificationConfigs", nil, want(`"kind":"storage#notifications"`, `"id":"{n}"`)},
		{"storage.notifications.insert", "POST", bkt + "/notificationConfigs", `{"topic":"//pubsub.googleapis.com/projects/p/topics/u","payload_format":"NONE","event_types":["OBJECT_FINALIZE"]}`, 200,
			"/storage/v1/b/missing/notificationConfigs", nil, want(`"topic":"//pubsub.googleapis.com/projects/p/topics/u"`, `"event_types":["OBJECT_FINALIZE"]`)},
		{"storage.notifications.get", "GET", bkt + "/notificationConfigs/{n}", "", 200, bkt + "/notificationConfigs/999", nil, want(`"payload_format":"JSON_API_V1"`)},
		{"storage.notifications.delete", "DELETE", bkt + "/notificationConfigs/{n}", "", 204, bkt + "/notificationConfigs/999", nil, nil},

		{"storage.hmacKey.create", "POST", hmac + "?serviceAccountEmail=sa@example.com", "", 200, "", nil, want(`"secret":`, `"state":"ACTIVE"`)},
		{"storage.hmacKey.list", "GET", hmac + "?serviceAccountEmail=sa@example.com", "", 200, "", nil, want(`"accessId":"{k}"`)},
		{"storage.hmacKey.get", "GET", hmac + "/{k}", "", 200, hmac + "/GOOG1Emissing", nil, want(`"state":"INACTIVE"`)},
		{"storage.hmacKey.update", "PUT", hmac + "/{k}", `{"state":"ACTIVE","etag":"{ke}"}`, 200, hmac + "/GOOG1Emissing",
			[]precondition{{body: `{"state":"ACTIVE","etag":"CAE="}`, status: 412}}, want(`"state":"ACTIVE"`)},
		{"storage.hmacKey.delete", "DELETE", hmac + "/{k}", "", 204, hmac + "/GOOG1Emissing", nil, nil},
		{"storage.serviceaccount.get", "GET", "/storage/v1/projects/p/serviceAccount", "", 200, "", nil,
			want(`"email_address":"service-0@gs-project-accounts.iam.gserviceaccount.com"`)},

		{"storage.objects.copy", "POST", obj + "/copyTo/b/{b}/o/dst", `{"metadata":{"k":"v"}}`, 200, bkt + "/o/missing/copyTo/b/{b}/o/dst", copyPre,
			want(`"name":"dst"`, `"metadata":{"k":"v"}`, `"size":"6"`)},
		{"storage.objects.rewrite", "POST", obj + "/rewriteTo/b/{b}/o/dst", `{"storageClass":"COLDLINE"}`, 200, bkt + "/o/missing/rewriteTo/b/{b}/o/dst", copyPre,
			want(`"done":true`, `"storageClass":"COLDLINE"`, `"totalBytesRewritten":"6"`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Run("ok", func(t *testing.T) {
				f := newMethodFixture(t)
				r, err := send(t, f.srv, tc.method, f.expand(tc.path), f.expand(tc.body))
				if err != nil || r.status != tc.ok {
					t.Fatalf("%v, %+v", err, r)
				}
				if tc.check != nil {
					tc.check(t, f, r)
				}
			})
			if tc.missing != "" {
				t.Run("404", func(t *testing.T) {
					f := newMethodFixture(t)
					r, err := send(t, f.srv, tc.method, f.expand(tc.missing), f.expand(tc.body))
					if err != nil {
						t.Fatal(err)
					}
					if reason, _ := r.errorReason(t, 404); reason != "notFound" {
						t.Fatalf("reason %q", reason)
					}
				})
			}
			for _, p := range tc.pre {
				t.Run(fmt.Sprintf("%s%s=%d", p.query, p.body, p.status), func(t *testing.T) {
					f := newMethodFixture(t)
					path, body := f.expand(tc.path), f.expand(tc.body)
					if p.query != "" {
						// The failing precondition replaces the
						// request's own of that name.
						u, err := url.Parse(path)
						if err != nil {
							t.Fatal(err)
						}
						k, v, _ := strings.Cut(f.expand(p.query), "=")
						q := u.Query()
						q.Set(k, v)
						u.RawQuery = q.Encode()
						path = u.String()
					}
					if p.body != "" {
						body = p.body
					}
					r, err := send(t, f.srv, tc.method, path, body)
					if err != nil {
						t.Fatal(err)
					}
					if p.status == 304 {
						if r.status != 304 {
							t.Fatalf("status %d, want 304; body %s", r.status, r.body)
						}
						return
					}
					if reason, _ := r.errorReason(t, p.status); reason != "conditionNotMet" {
						t.Fatalf("reason %q", reason)
					}
				})
			}
			for _, instr := range []string{"return-503", "return-reset-connection"} {
				t.Run(instr, func(t *testing.T) {
					f := newMethodFixture(t)
					id := newRetryTest(t, f.srv, "HTTP", map[string][]string{tc.name: {instr}})
					r, err := send(t, f.srv, tc.method, f.expand(tc.path), f.expand(tc.body), "x-retry-test-id", id)
					switch {
					case instr == "return-503" && (err != nil || r.status != 503):
						t.Fatalf("under return-503: %v, %+v", err, r)
					case instr == "return-reset-connection" && err == nil:
						t.Fatalf("under a reset: %+v", r)
					}
					completed(t, f.srv, id)
					// Nothing was done: the same request now succeeds.
					r, err = send(t, f.srv, tc.method, f.expand(tc.path), f.expand(tc.body), "x-retry-test-id", id)
					if err != nil || r.status != tc.ok {
						t.Fatalf("retried: %v, %+v", err, r)
					}
				})
			}
		})
	}
}

// want returns a check that the answer's body holds every snippet, with
// the fixture's placeholders expanded.
func want(snippets ...string) func(*testing.T, *methodFixture, *reply) {
	return func(t *testing.T, f *methodFixture, r *reply) {
		t.Helper()
		var v any
		if err := json.Unmarshal(r.body, &v); err != nil {
			t.Fatalf("body %q: %v", r.body, err)
		}
		for _, s := range snippets {
			if s = f.expand(s); !bytes.Contains(r.body, []byte(s)) {
				t.Fatalf("body %s\nlacks %s", r.body, s)
			}
		}
	}
}
