package fakes_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/fakes/capacity"
)

// TestXMLMultipartRoles: each role may do what GCS's predefined roles
// allow: an objectCreator runs a whole multipart upload of a new object,
// abort and list of parts included, but cannot list a bucket's uploads nor
// complete over a live object; an objectViewer can do none of it; an
// objectUser everything.
func TestXMLMultipartRoles(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket(bucket), fakes.WithCredential("creator", fakes.RoleObjectCreator),
		fakes.WithCredential("viewer", fakes.RoleObjectViewer), fakes.WithCredential("user", fakes.RoleObjectUser))
	body := payload(1000, 91)
	do(t, srv, "PUT", xmlPath("existing", ""), body)
	var id, etag string
	for _, tc := range []struct {
		name, token string
		call        func(tok []string) *reply
		st          int
	}{
		{"viewer initiates", "viewer", func(tok []string) *reply { return do(t, srv, "POST", xmlPath("new", "uploads"), nil, tok...) }, 403},
		{"viewer puts", "viewer", func(tok []string) *reply { return do(t, srv, "PUT", xmlPath("new", ""), body, tok...) }, 403},
		{"creator initiates", "creator", func(tok []string) *reply {
			r := do(t, srv, "POST", xmlPath("new", "uploads"), nil, tok...)
			id = initiatedID(t, r)
			return r
		}, 200},
		{"creator uploads a part", "creator", func(tok []string) *reply {
			r := putPart(t, srv, "new", id, 1, body, tok...)
			etag = r.header.Get("ETag")
			return r
		}, 200},
		{"viewer uploads a part", "viewer", func(tok []string) *reply { return putPart(t, srv, "new", id, 2, body, tok...) }, 403},
		{"creator lists the parts", "creator", func(tok []string) *reply { return do(t, srv, "GET", xmlPath("new", "uploadId="+id), nil, tok...) }, 200},
		{"viewer lists the parts", "viewer", func(tok []string) *reply { return do(t, srv, "GET", xmlPath("new", "uploadId="+id), nil, tok...) }, 403},
		{"creator lists the uploads", "creator", func(tok []string) *reply { return do(t, srv, "GET", "/"+bucket+"?uploads", nil, tok...) }, 403},
		{"viewer lists the uploads", "viewer", func(tok []string) *reply { return do(t, srv, "GET", "/"+bucket+"?uploads", nil, tok...) }, 403},
		{"user lists the uploads", "user", func(tok []string) *reply { return do(t, srv, "GET", "/"+bucket+"?uploads", nil, tok...) }, 200},
		{"viewer completes", "viewer", func(tok []string) *reply { return complete(t, srv, "new", id, []partRef{{1, etag}}, tok...) }, 403},
		{"viewer aborts", "viewer", func(tok []string) *reply { return do(t, srv, "DELETE", xmlPath("new", "uploadId="+id), nil, tok...) }, 403},
		{"creator completes", "creator", func(tok []string) *reply { return complete(t, srv, "new", id, []partRef{{1, etag}}, tok...) }, 200},
		{"creator initiates over a live object", "creator", func(tok []string) *reply {
			r := do(t, srv, "POST", xmlPath("existing", "uploads"), nil, tok...)
			id = initiatedID(t, r)
			return r
		}, 200},
		{"creator uploads its part", "creator", func(tok []string) *reply {
			r := putPart(t, srv, "existing", id, 1, body, tok...)
			etag = r.header.Get("ETag")
			return r
		}, 200},
		{"creator completes over a live object", "creator", func(tok []string) *reply {
			return complete(t, srv, "existing", id, []partRef{{1, etag}}, tok...)
		}, 403},
		{"creator aborts", "creator", func(tok []string) *reply {
			return do(t, srv, "DELETE", xmlPath("existing", "uploadId="+id), nil, tok...)
		}, 204},
		{"creator puts over a live object", "creator", func(tok []string) *reply { return do(t, srv, "PUT", xmlPath("existing", ""), body, tok...) }, 403},
		{"user completes over a live object", "user", func(tok []string) *reply {
			up := initiate(t, srv, "existing", tok...)
			return complete(t, srv, "existing", up, []partRef{{1, mustPart(t, srv, "existing", up, 1, body, tok...)}}, tok...)
		}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.call(auth(tc.token))
			if tc.st == 403 {
				wantXMLError(t, tc.name, r, 403, "AccessDenied")
				if !strings.Contains(string(r.body), "does not have storage.") {
					t.Fatalf("%s: %s", tc.name, r.body)
				}
				return
			}
			if r.status != tc.st {
				t.Fatalf("%s: %d %s", tc.name, r.status, r.body)
			}
		})
	}
	if got := srv.MultipartUploads(); len(got) != 0 {
		t.Fatalf("uploads left %+v", got)
	}
	sameBytes(t, "new", readXML(t, srv, "new").body, body)
}

// initiatedID reads the UploadId of an initiate's answer; "" if none.
func initiatedID(t *testing.T, r *reply) string {
	t.Helper()
	_, after, ok := strings.Cut(string(r.body), "<UploadId>")
	id, _, ok2 := strings.Cut(after, "</UploadId>")
	if !ok || !ok2 {
		return ""
	}
	return id
}

// TestXMLMultipartFaults: the fault rules take the XML API's calls by
// method name: FailCall fails a part's upload and a complete once (the
// retry succeeds), LoseAnswer stores the object and drops the answer (a
// retried complete is then NoSuchUpload, and the object is there),
// BreakStream cuts a part on its way (nothing kept), CorruptNext flips a
// part's byte (its digest then fails), Delay holds an initiate; the log
// records each call with its code.
func TestXMLMultipartFaults(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket(bucket))
	p1, p2 := payload(5*mib, 101), payload(3000, 102)
	id := initiate(t, srv, "f")
	srv.ResetCalls()

	srv.FailCall("xml.multipart.uploadPart", 1, codes.Unavailable)
	wantXMLError(t, "failed part", putPart(t, srv, "f", id, 1, p1), 503, "ServiceUnavailable")
	e1 := mustPart(t, srv, "f", id, 1, p1)

	srv.BreakStream("xml.multipart.uploadPart", 1000, codes.Unavailable)
	if r, err := rawDo(t, srv, "PUT", xmlPath("f", "partNumber=2&uploadId="+id), p2); err == nil {
		t.Fatalf("broken part answered %d %s", r.status, r.body)
	}
	if got := srv.MultipartUploads(); len(got) != 1 || !slices.Equal(got[0].Parts, []int{1}) {
		t.Fatalf("after the break: %+v", got)
	}
	srv.CorruptNext("xml.multipart.uploadPart")
	wantXMLError(t, "corrupted part", putPart(t, srv, "f", id, 2, p2, "Content-MD5", b64MD5(p2)), 400, "BadDigest")
	e2 := mustPart(t, srv, "f", id, 2, p2)

	srv.FailCall("xml.multipart.complete", 1, codes.Internal)
	parts := []partRef{{1, e1}, {2, e2}}
	wantXMLError(t, "failed complete", complete(t, srv, "f", id, parts), 500, "InternalError")
	srv.LoseAnswer("xml.multipart.complete")
	if r, err := rawDo(t, srv, "POST", xmlPath("f", "uploadId="+id), completeBody(parts)); err == nil {
		t.Fatalf("lost complete answered %d %s", r.status, r.body)
	}
	sameBytes(t, "stored despite the lost answer", readXML(t, srv, "f").body, slices.Concat(p1, p2))
	wantXMLError(t, "complete again", complete(t, srv, "f", id, parts), 404, "NoSuchUpload")

	srv.Delay("xml.multipart.initiate", 100*time.Millisecond)
	start := time.Now()
	id2 := initiate(t, srv, "f")
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("delayed initiate took %v", d)
	}
	srv.ClearFaults()
	srv.LoseAnswer("xml.objects.put")
	if _, err := rawDo(t, srv, "PUT", xmlPath("put", ""), p2); err == nil {
		t.Fatal("lost PUT answered")
	}
	sameBytes(t, "PUT stored", readXML(t, srv, "put").body, p2)
	if r := do(t, srv, "DELETE", xmlPath("f", "uploadId="+id2), nil); r.status != 204 {
		t.Fatalf("abort: %d", r.status)
	}

	want := []string{"xml.multipart.uploadPart Unavailable", "xml.multipart.uploadPart OK", "xml.multipart.uploadPart Unavailable",
		"xml.multipart.uploadPart DataLoss", "xml.multipart.uploadPart OK", "xml.multipart.complete Internal",
		"xml.multipart.complete Unavailable", "xml.objects.get OK", "xml.multipart.complete NotFound",
		"xml.multipart.initiate OK", "xml.objects.put Unavailable", "xml.objects.get OK", "xml.multipart.abort OK"}
	if got := callsOf(srv); !slices.Equal(got, want) {
		t.Fatalf("calls\n%q\nwant\n%q", got, want)
	}
	for _, bad := range []func(){
		func() { srv.BreakStream("xml.multipart.complete", 0, codes.Unavailable) },
		func() { srv.CorruptNext("xml.multipart.initiate") },
		func() { srv.LoseAnswer("xml.multipart.listParts") },
		func() { srv.FailCall("xml.nothing", 1, codes.Unavailable) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("a fault rule took a method it does not apply to")
				}
			}()
			bad()
		}()
	}
}

// TestXMLMultipartRetryTest: the retry test API's instructions apply to
// the XML calls by the testbench's routes: a part's upload and a complete
// consume those of storage.objects.insert, an abort those of
// storage.objects.delete.
func TestXMLMultipartRetryTest(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket(bucket))
	p1, p2 := payload(5*mib, 111), payload(300<<10, 112)
	id := initiate(t, srv, "r")
	test := newRetryTest(t, srv, "HTTP", map[string][]string{"storage.objects.insert": {"return-503", "return-503-after-256K"}})
	hdr := []string{"x-retry-test-id", test}
	wantXMLError(t, "part under return-503", putPart(t, srv, "r", id, 1, p1, hdr...), 503, "ServiceUnavailable")
	wantXMLError(t, "part under return-503-after-256K", putPart(t, srv, "r", id, 2, p2, hdr...), 503, "ServiceUnavailable")
	if got := srv.MultipartUploads(); len(got) != 1 || len(got[0].Parts) != 0 {
		t.Fatalf("parts kept under the instructions: %+v", got)
	}
	if !retryTest(t, srv, test).Completed {
		t.Fatal("the test is not completed")
	}
	e1 := mustPart(t, srv, "r", id, 1, p1, hdr...)
	e2 := mustPart(t, srv, "r", id, 2, p2, hdr...)

	test = newRetryTest(t, srv, "HTTP", map[string][]string{"storage.objects.insert": {"return-500"}, "storage.objects.delete": {"return-503"}})
	hdr = []string{"x-retry-test-id", test}
	parts := []partRef{{1, e1}, {2, e2}}
	wantXMLError(t, "complete under return-500", complete(t, srv, "r", id, parts, hdr...), 500, "InternalError")
	if r := complete(t, srv, "r", id, parts, hdr...); r.status != 200 {
		t.Fatalf("complete: %d %s", r.status, r.body)
	}
	id2 := initiate(t, srv, "r")
	wantXMLError(t, "abort under return-503", do(t, srv, "DELETE", xmlPath("r", "uploadId="+id2), nil, hdr...), 503, "ServiceUnavailable")
	if r := do(t, srv, "DELETE", xmlPath("r", "uploadId="+id2), nil, hdr...); r.status != 204 {
		t.Fatalf("abort: %d %s", r.status, r.body)
	}
	if !retryTest(t, srv, test).Completed {
		t.Fatal("the second test is not completed")
	}
	sameBytes(t, "object", readXML(t, srv, "r").body, slices.Concat(p1, p2))
}

// TestXMLMultipartCapacity: a complete is one object write against the
// bucket's capacity, the initiate and the parts none; a complete refused
// for the bucket's rate leaves the upload as it was.
func TestXMLMultipartCapacity(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket(bucket),
		fakes.WithBucketCapacity(bucket, capacity.Config{Rate: 0.001, Burst: 1, ObjectRate: -1}))
	body := payload(2000, 121)
	id := initiate(t, srv, "c")
	e := mustPart(t, srv, "c", id, 1, body)
	mustPart(t, srv, "c", id, 1, body)
	if r := complete(t, srv, "c", id, []partRef{{1, e}}); r.status != 200 {
		t.Fatalf("complete: %d %s", r.status, r.body)
	}
	id = initiate(t, srv, "d")
	e = mustPart(t, srv, "d", id, 1, body)
	wantXMLError(t, "complete over the rate", complete(t, srv, "d", id, []partRef{{1, e}}), 429, "SlowDown")
	if got := srv.MultipartUploads(); len(got) != 1 || got[0].UploadID != id {
		t.Fatalf("uploads %+v", got)
	}
	if st := srv.CapacityStats(); len(st) != 1 || st[0].Counts != (capacity.Counts{Admitted: 1, RateLimited: 1}) {
		t.Fatalf("CapacityStats %+v", st)
	}
}
