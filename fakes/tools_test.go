package fakes_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/objup/objup/fakes"
)

// TestMultipartBoundaryForms uploads one object per form of the
// Content-Type's boundary parameter: every form RFC 2046 allows (a token,
// a quoted string with the characters a token cannot hold), the
// single-quoted form Python's HTTP stack writes (gcloud and gsutil), an
// unquoted value with characters that should have been quoted, and a
// single-quoted token whose quotes belong to the boundary. The malformed
// ones get 400.
func TestMultipartBoundaryForms(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket(bucket))
	for i, tc := range []struct {
		name     string
		boundary string // in the body
		param    string // the Content-Type's parameters
		want     int
	}{
		{"token", "abc123", "boundary=abc123", http.StatusOK},
		{"quoted", "a b=c:d", `boundary="a b=c:d"`, http.StatusOK},
		{"quoted with an escape", `a=b`, `boundary="a\=b"`, http.StatusOK},
		{"single-quoted, as Python writes it", "===============7490029197576096281==", "boundary='===============7490029197576096281=='", http.StatusOK},
		{"unquoted boundary characters", "===1234==", "boundary====1234==", http.StatusOK},
		{"single quotes that belong to the token", "'abc'", "boundary='abc'", http.StatusOK},
		{"single-quoted token", "abc", "boundary='abc'", http.StatusOK},
		{"after another parameter", "xyz", "charset=utf-8; boundary='xyz'", http.StatusOK},
		{"upper-case name, spaces", "xyz", "BOUNDARY = xyz ", http.StatusOK},
		{"no boundary", "abc", "charset=utf-8", http.StatusBadRequest},
		{"two single quotes (the boundary ''), a body without it", "abc", "boundary=''", http.StatusBadRequest},
		{"unquoted, too long", "=" + strings.Repeat("b", 70), "boundary==" + strings.Repeat("b", 70), http.StatusBadRequest},
		{"single-quoted, a character RFC 2046 does not allow", "a<b", "boundary='a<b'", http.StatusBadRequest},
		{"unterminated quote", "abc", `boundary="abc`, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "boundary-" + string(rune('a'+i))
			body := "--" + tc.boundary + "\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n" +
				`{"name":"` + name + `"}` + "\r\n--" + tc.boundary + "\r\nContent-Type: text/plain\r\n\r\n" +
				"data of " + name + "\r\n--" + tc.boundary + "--\r\n"
			r := do(t, srv, "POST", uploadPath("multipart", ""), []byte(body), "Content-Type", "multipart/related; "+tc.param)
			if r.status != tc.want {
				t.Fatalf("status %d, want %d: %s", r.status, tc.want, r.body)
			}
			if tc.want != http.StatusOK {
				return
			}
			got := do(t, srv, "GET", objPath(name)+"?alt=media", nil)
			if string(got.body) != "data of "+name {
				t.Fatalf("content %q", got.body)
			}
		})
	}
}

// TestResumableUploadPath starts a session on the resumable upload path
// of the discovery document (/resumable/upload/storage/v1/...), as
// apitools does, and finishes it at the session URI.
func TestResumableUploadPath(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket(bucket))
	r := do(t, srv, "POST", "/resumable"+uploadPath("resumable", "")+"&alt=json", []byte(`{"name":"r"}`), "Content-Type", "application/json")
	loc := r.header.Get("Location")
	if r.status != http.StatusOK || loc == "" {
		t.Fatalf("start: %d %q: %s", r.status, loc, r.body)
	}
	if r := do(t, srv, "PUT", loc, []byte("hello"), "Content-Range", "bytes 0-4/5"); r.status != http.StatusOK {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	if got := do(t, srv, "GET", objPath("r")+"?alt=media", nil); string(got.body) != "hello" {
		t.Fatalf("content %q", got.body)
	}
	if r := do(t, srv, "GET", "/resumable/upload/storage/v1/b/"+bucket+"/o", nil); r.status != http.StatusNotImplemented {
		t.Fatalf("GET on the resumable path: %d, want 501", r.status)
	}
}

// TestStorageLayout reads buckets.getStorageLayout of a bucket, of a
// bucket with a hierarchical namespace and of no bucket.
func TestStorageLayout(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket(bucket))
	if r := jsonPost(t, srv, "/storage/v1/b?project=p", `{"name":"hns","hierarchicalNamespace":{"enabled":true},"iamConfiguration":{"uniformBucketLevelAccess":{"enabled":true}}}`); r.status != http.StatusOK {
		t.Fatalf("insert: %d %s", r.status, r.body)
	}
	if r := jsonPost(t, srv, "/storage/v1/b?project=p", `{"name":"flat","hierarchicalNamespace":{"enabled":false}}`); r.status != http.StatusOK {
		t.Fatalf("insert: %d %s", r.status, r.body)
	}
	for _, tc := range []struct {
		bucket string
		status int
		hns    bool
	}{
		{bucket, http.StatusOK, false},
		{"hns", http.StatusOK, true},
		{"flat", http.StatusOK, false},
		{"none", http.StatusNotFound, false},
	} {
		t.Run(tc.bucket, func(t *testing.T) {
			r := do(t, srv, "GET", "/storage/v1/b/"+tc.bucket+"/storageLayout?alt=json&prefix=a/", nil)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.status != http.StatusOK {
				return
			}
			var l, b map[string]any
			r.decode(t, &l)
			do(t, srv, "GET", "/storage/v1/b/"+tc.bucket, nil).decode(t, &b)
			if l["kind"] != "storage#storageLayout" || l["bucket"] != tc.bucket || l["location"] != b["location"] || l["locationType"] != b["locationType"] {
				t.Fatalf("layout %s; bucket %v", r.body, b)
			}
			if _, has := l["hierarchicalNamespace"]; has != tc.hns {
				t.Fatalf("layout %s: hierarchicalNamespace present %v, want %v", r.body, has, tc.hns)
			}
		})
	}
}

// TestListIncludeFoldersAsPrefixes lists with includeFoldersAsPrefixes,
// which gcloud storage sets with the delimiter "/": the fake has no
// folders, so the answer is the listing without it (without the delimiter
// "/" the parameter does not apply).
func TestListIncludeFoldersAsPrefixes(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket(bucket))
	for _, n := range []string{"a/1", "a/b/2", "c"} {
		if r := do(t, srv, "POST", uploadPath("media", n), []byte(n)); r.status != http.StatusOK {
			t.Fatalf("upload %s: %d %s", n, r.status, r.body)
		}
	}
	list := "/storage/v1/b/" + bucket + "/o?"
	for _, tc := range []struct {
		query  string
		status int
		want   string
	}{
		{"&delimiter=%2F&includeFoldersAsPrefixes=True", http.StatusOK, `{"items":["c"],"prefixes":["a/"]}`},
		{"&delimiter=%2F&includeFoldersAsPrefixes=false&prefix=a/", http.StatusOK, `{"items":["a/1"],"prefixes":["a/b/"]}`},
		{"&includeFoldersAsPrefixes=true&prefix=a/", http.StatusOK, `{"items":["a/1","a/b/2"],"prefixes":null}`},
		{"&delimiter=b&includeFoldersAsPrefixes=true&prefix=a/", http.StatusOK, `{"items":["a/1"],"prefixes":["a/b"]}`},
		{"&delimiter=%2F&includeFoldersAsPrefixes=maybe", http.StatusBadRequest, ""},
	} {
		t.Run(tc.query, func(t *testing.T) {
			r := do(t, srv, "GET", list+tc.query, nil)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.want == "" {
				return
			}
			var l struct {
				Items []struct {
					Name string `json:"name"`
				} `json:"items"`
				Prefixes []string `json:"prefixes"`
			}
			r.decode(t, &l)
			names := []string{}
			for _, it := range l.Items {
				names = append(names, it.Name)
			}
			got, _ := json.Marshal(map[string]any{"items": names, "prefixes": l.Prefixes})
			if !jsonEqual(t, got, tc.want) {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestListManagedFolders lists a bucket's managed folders (none: the fake
// keeps none), as gcloud storage does before it deletes a bucket.
func TestListManagedFolders(t *testing.T) {
	srv := fakes.NewTest(t, fakes.WithBucket(bucket))
	for _, tc := range []struct {
		path   string
		status int
	}{
		{"/storage/v1/b/" + bucket + "/managedFolders?pageSize=1000", http.StatusOK},
		{"/storage/v1/b/none/managedFolders", http.StatusNotFound},
	} {
		r := do(t, srv, "GET", tc.path, nil)
		if r.status != tc.status {
			t.Fatalf("%s: status %d, want %d: %s", tc.path, r.status, tc.status, r.body)
		}
		if tc.status == http.StatusOK && !jsonEqual(t, r.body, `{"kind":"storage#managedFolders"}`) {
			t.Fatalf("%s: %s", tc.path, r.body)
		}
	}
	if r := do(t, srv, "POST", "/storage/v1/b/"+bucket+"/managedFolders", []byte(`{"name":"m/"}`)); r.status != http.StatusNotImplemented {
		t.Fatalf("insert: %d, want 501", r.status)
	}
}

// jsonEqual reports whether the JSON documents got and want are equal.
func jsonEqual(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	return string(gb) == string(wb)
}
