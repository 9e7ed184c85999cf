package fakes_test

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/objup/objup/fakes"
)

// TestXMLMultipartRestart: with a store on disk, multipart uploads and
// their parts survive a restart of the server (an aborted one does not
// come back), and the upload completes on the new server; once completed,
// it is gone after the next restart too, and the object stays.
func TestXMLMultipartRestart(t *testing.T) {
	dir := t.TempDir()
	p1, p2, p3 := payload(5*mib, 131), payload(5*mib+1, 132), payload(777, 133)
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, srv *fakes.Server)
	}{
		{"before", func(t *testing.T, srv *fakes.Server) {
			id := initiate(t, srv, "kept", "Content-Type", "text/x-kept", "X-Goog-Meta-K", "v")
			mustPart(t, srv, "kept", id, 1, p1)
			mustPart(t, srv, "kept", id, 2, p3) // replaced after the restart
			gone := initiate(t, srv, "gone")
			mustPart(t, srv, "gone", gone, 1, p3)
			if r := do(t, srv, "DELETE", xmlPath("gone", "uploadId="+gone), nil); r.status != 204 {
				t.Fatalf("abort: %d", r.status)
			}
			// What a kill can leave: an initiate without its record, a
			// part on its way.
			os.Mkdir(filepath.Join(dir, "multipart", "cut-short"), 0o755)
			os.WriteFile(filepath.Join(dir, "multipart", id, "tmp-1"), p3, 0o644)
		}},
		{"after", func(t *testing.T, srv *fakes.Server) {
			ups := srv.MultipartUploads()
			if len(ups) != 1 || ups[0].Object != "kept" || !slices.Equal(ups[0].Parts, []int{1, 2}) || ups[0].Size != int64(len(p1)+len(p3)) {
				t.Fatalf("uploads after the restart: %+v", ups)
			}
			id := ups[0].UploadID
			r := do(t, srv, "GET", xmlPath("kept", "uploadId="+id), nil)
			var res struct {
				Parts []struct{ ETag string } `xml:"Part"`
			}
			if r.status != 200 || xml.Unmarshal(r.body, &res) != nil || len(res.Parts) != 2 ||
				res.Parts[0].ETag != hexETag(p1) || res.Parts[1].ETag != hexETag(p3) {
				t.Fatalf("parts after the restart: %d %s", r.status, r.body)
			}
			e2 := mustPart(t, srv, "kept", id, 2, p2)
			e3 := mustPart(t, srv, "kept", id, 3, p3)
			if r := complete(t, srv, "kept", id, []partRef{{1, hexETag(p1)}, {2, e2}, {3, e3}}); r.status != 200 {
				t.Fatalf("complete: %d %s", r.status, r.body)
			}
		}},
		{"completed", func(t *testing.T, srv *fakes.Server) {
			if ups := srv.MultipartUploads(); len(ups) != 0 {
				t.Fatalf("uploads after the complete and a restart: %+v", ups)
			}
			if left, err := os.ReadDir(filepath.Join(dir, "multipart")); err != nil || len(left) != 0 {
				t.Fatalf("files left of the uploads: %v, %v", left, err)
			}
			r := readXML(t, srv, "kept")
			sameBytes(t, "object", r.body, slices.Concat(p1, p2, p3))
			if r.header.Get("Content-Type") != "text/x-kept" || r.header.Get("X-Goog-Meta-K") != "v" {
				t.Fatalf("headers %v", r.header)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := fakes.New(fakes.WithBucket(bucket), fakes.WithDataDir(dir))
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close() // Close is idempotent: after a failure too
			tc.run(t, srv)
			if err := srv.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
