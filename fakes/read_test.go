package fakes_test

import (
	"crypto/md5"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/internal/wire"
)

func TestReadObjectRanges(t *testing.T) {
	_, cc := start(t)
	const size = 5*mib + 3
	data := payload(size, 9)
	put(t, cc, "big", data)
	put(t, cc, "empty", nil)

	for _, tc := range []struct {
		name          string
		object        string
		offset, limit int64
		start, end    int64 // expected range
		code          codes.Code
	}{
		{"whole", "big", 0, 0, 0, size, codes.OK},
		{"offset", "big", 3*mib + 1, 0, 3*mib + 1, size, codes.OK},
		{"offset and limit", "big", 100, 2*mib + 7, 100, 2*mib + 107, codes.OK},
		{"limit past the end", "big", size - 10, 1000, size - 10, size, codes.OK},
		{"negative offset", "big", -5, 0, size - 5, size, codes.OK},
		{"negative offset and limit", "big", -15, 3, size - 15, size - 12, codes.OK},
		{"negative offset past the start", "big", -size - 100, 0, 0, size, codes.OK},
		{"offset at the end", "big", size, 0, size, size, codes.OK},
		{"offset past the end", "big", size + 1, 0, 0, 0, codes.OutOfRange},
		{"negative limit", "big", 0, -1, 0, 0, codes.InvalidArgument},
		{"empty object", "empty", 0, 0, 0, 0, codes.OK},
		{"missing object", "nope", 0, 0, 0, 0, codes.NotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs, got, err := readObject(ctxT(t), cc, &wire.ReadObjectRequest{
				Bucket: bucketRes, Object: tc.object, ReadOffset: tc.offset, ReadLimit: tc.limit,
			})
			wantCode(t, err, tc.code)
			if tc.code != codes.OK {
				return
			}
			want := data[tc.start:tc.end]
			if tc.object == "empty" {
				want = nil
			}
			sameBytes(t, "content", got, want)
			full := data
			if tc.object == "empty" {
				full = nil
			}
			first := msgs[0]
			if meta := first.GetMetadata(); meta.GetName() != tc.object || meta.GetSize() != int64(len(full)) {
				t.Fatalf("metadata %v", meta)
			}
			sum := md5.Sum(full)
			if first.GetObjectChecksums().GetCrc32C() != crcOf(full) || string(first.GetObjectChecksums().GetMd5Hash()) != string(sum[:]) {
				t.Fatalf("object checksums %v", first.GetObjectChecksums())
			}
			cr := first.GetContentRange()
			if cr.GetStart() != tc.start || cr.GetEnd() != int64(len(want))+tc.start || cr.GetCompleteLength() != int64(len(full)) {
				t.Fatalf("content range %v", cr)
			}
			for i, m := range msgs {
				c := m.GetChecksummedData()
				if i > 0 && (m.GetMetadata() != nil || m.GetObjectChecksums() != nil || m.GetContentRange() != nil) {
					t.Fatalf("message %d repeats the first message's fields", i)
				}
				if len(c.GetContent()) > 2*mib {
					t.Fatalf("message %d has %d bytes", i, len(c.GetContent()))
				}
				if c != nil && (c.Crc32C == nil || *c.Crc32C != crcOf(c.GetContent())) {
					t.Fatalf("message %d: bad or missing CRC32C", i)
				}
			}
			if wantMsgs := max(1, (len(want)+2*mib-1)/(2*mib)); len(msgs) != wantMsgs {
				t.Fatalf("%d messages, want %d", len(msgs), wantMsgs)
			}
		})
	}
}

func TestReadAndStatPreconditions(t *testing.T) {
	_, cc := start(t)
	old := put(t, cc, "o", []byte("one"))
	cur := put(t, cc, "o", []byte("two"))
	i64 := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name string
		edit func(r *wire.GetObjectRequest)
		code codes.Code
	}{
		{"generation match", func(r *wire.GetObjectRequest) { r.IfGenerationMatch = i64(cur.Generation) }, codes.OK},
		{"generation mismatch", func(r *wire.GetObjectRequest) { r.IfGenerationMatch = i64(old.Generation) }, codes.FailedPrecondition},
		{"generation not match", func(r *wire.GetObjectRequest) { r.IfGenerationNotMatch = i64(cur.Generation) }, codes.FailedPrecondition},
		{"metageneration match", func(r *wire.GetObjectRequest) { r.IfMetagenerationMatch = i64(1) }, codes.OK},
		{"metageneration mismatch", func(r *wire.GetObjectRequest) { r.IfMetagenerationMatch = i64(3) }, codes.FailedPrecondition},
		{"metageneration not match", func(r *wire.GetObjectRequest) { r.IfMetagenerationNotMatch = i64(1) }, codes.FailedPrecondition},
		{"old generation is gone", func(r *wire.GetObjectRequest) { r.Generation = old.Generation }, codes.NotFound},
		{"current generation", func(r *wire.GetObjectRequest) { r.Generation = cur.Generation }, codes.OK},
		{"soft deleted", func(r *wire.GetObjectRequest) { r.SoftDeleted = new(bool); *r.SoftDeleted = true }, codes.Unimplemented},
		{"unknown bucket", func(r *wire.GetObjectRequest) { r.Bucket = "projects/_/buckets/nope" }, codes.NotFound},
		{"bad bucket", func(r *wire.GetObjectRequest) { r.Bucket = "buckets/x" }, codes.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &wire.GetObjectRequest{Bucket: bucketRes, Object: "o"}
			tc.edit(req)
			obj, err := getObject(ctxT(t), cc, req)
			wantCode(t, err, tc.code)
			if err == nil && obj.GetGeneration() != cur.Generation {
				t.Fatalf("generation %d, want %d", obj.GetGeneration(), cur.Generation)
			}
			// ReadObject has the same fields, and must agree.
			rr := &wire.ReadObjectRequest{
				Bucket: req.Bucket, Object: req.Object, Generation: req.Generation,
				IfGenerationMatch: req.IfGenerationMatch, IfGenerationNotMatch: req.IfGenerationNotMatch,
				IfMetagenerationMatch: req.IfMetagenerationMatch, IfMetagenerationNotMatch: req.IfMetagenerationNotMatch,
			}
			if tc.name == "soft deleted" {
				return
			}
			_, data, err := readObject(ctxT(t), cc, rr)
			wantCode(t, err, tc.code)
			if err == nil && string(data) != "two" {
				t.Fatalf("read %q", data)
			}
		})
	}
}

func TestDeleteObject(t *testing.T) {
	_, cc := start(t)
	i64 := func(v int64) *int64 { return &v }
	del := func(req *wire.DeleteObjectRequest) error {
		return cc.Invoke(ctxT(t), wire.MethodDeleteObject, req, new(wire.Object))
	}
	obj := put(t, cc, "d", []byte("x"))
	wantCode(t, del(&wire.DeleteObjectRequest{Bucket: bucketRes, Object: "d", IfGenerationMatch: i64(obj.Generation + 1)}), codes.FailedPrecondition)
	wantCode(t, del(&wire.DeleteObjectRequest{Bucket: bucketRes, Object: "d", IfMetagenerationMatch: i64(2)}), codes.FailedPrecondition)
	wantCode(t, del(&wire.DeleteObjectRequest{Bucket: bucketRes, Object: "d", Generation: obj.Generation + 1}), codes.NotFound)
	wantCode(t, del(&wire.DeleteObjectRequest{Bucket: bucketRes, Object: "d", IfGenerationMatch: i64(obj.Generation)}), codes.OK)
	absent(t, cc, "d")
	wantCode(t, del(&wire.DeleteObjectRequest{Bucket: bucketRes, Object: "d"}), codes.NotFound)
	wantCode(t, del(&wire.DeleteObjectRequest{Bucket: "projects/_/buckets/nope", Object: "d"}), codes.NotFound)

	obj = put(t, cc, "g", []byte("x"))
	wantCode(t, del(&wire.DeleteObjectRequest{Bucket: bucketRes, Object: "g", Generation: obj.Generation}), codes.OK)
	absent(t, cc, "g")
}

func TestListObjects(t *testing.T) {
	_, cc := start(t)
	names := []string{"a", "b/1", "b/2", "b/", "b/c/3", "c", "d/4", "e"}
	for _, n := range names {
		put(t, cc, n, []byte(n))
	}
	type page struct {
		objects, prefixes []string
	}
	list := func(req *wire.ListObjectsRequest) ([]page, error) {
		var pages []page
		for i := 0; i < 20; i++ { // bounded: no test needs more pages
			var resp wire.ListObjectsResponse
			if err := cc.Invoke(ctxT(t), wire.MethodListObjects, req, &resp); err != nil {
				return pages, err
			}
			var p page
			for _, o := range resp.GetObjects() {
				p.objects = append(p.objects, o.GetName())
				if string(get(t, cc, o.GetName())) != o.GetName() || o.GetSize() != int64(len(o.GetName())) {
					t.Fatalf("listed object %v", o)
				}
			}
			p.prefixes = resp.GetPrefixes()
			pages = append(pages, p)
			if resp.GetNextPageToken() == "" {
				return pages, nil
			}
			req.PageToken = resp.GetNextPageToken()
		}
		t.Fatal("too many pages")
		return nil, nil
	}
	for _, tc := range []struct {
		name string
		req  *wire.ListObjectsRequest
		want []page
	}{
		{"all", &wire.ListObjectsRequest{}, []page{{objects: []string{"a", "b/", "b/1", "b/2", "b/c/3", "c", "d/4", "e"}}}},
		{"prefix", &wire.ListObjectsRequest{Prefix: "b/"}, []page{{objects: []string{"b/", "b/1", "b/2", "b/c/3"}}}},
		{"delimiter", &wire.ListObjectsRequest{Delimiter: "/"}, []page{{objects: []string{"a", "c", "e"}, prefixes: []string{"b/", "d/"}}}},
		{"prefix and delimiter", &wire.ListObjectsRequest{Prefix: "b/", Delimiter: "/"}, []page{{objects: []string{"b/", "b/1", "b/2"}, prefixes: []string{"b/c/"}}}},
		{"trailing delimiter", &wire.ListObjectsRequest{Delimiter: "/", IncludeTrailingDelimiter: true}, []page{{objects: []string{"a", "b/", "c", "e"}, prefixes: []string{"b/", "d/"}}}},
		{"pages of 3", &wire.ListObjectsRequest{PageSize: 3}, []page{
			{objects: []string{"a", "b/", "b/1"}}, {objects: []string{"b/2", "b/c/3", "c"}}, {objects: []string{"d/4", "e"}},
		}},
		{"pages with prefixes", &wire.ListObjectsRequest{PageSize: 2, Delimiter: "/"}, []page{
			{objects: []string{"a"}, prefixes: []string{"b/"}}, {objects: []string{"c"}, prefixes: []string{"d/"}}, {objects: []string{"e"}},
		}},
		{"lexicographic range", &wire.ListObjectsRequest{LexicographicStart: "b/2", LexicographicEnd: "d"}, []page{{objects: []string{"b/2", "b/c/3", "c"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Parent = bucketRes
			pages, err := list(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(pages) != fmt.Sprint(tc.want) {
				t.Fatalf("got  %v\nwant %v", pages, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		req  *wire.ListObjectsRequest
		code codes.Code
	}{
		{&wire.ListObjectsRequest{Parent: "projects/_/buckets/nope"}, codes.NotFound},
		{&wire.ListObjectsRequest{Parent: "nope"}, codes.InvalidArgument},
		{&wire.ListObjectsRequest{Parent: bucketRes, PageSize: -1}, codes.InvalidArgument},
		{&wire.ListObjectsRequest{Parent: bucketRes, PageToken: "!!"}, codes.InvalidArgument},
		{&wire.ListObjectsRequest{Parent: bucketRes, MatchGlob: "*"}, codes.Unimplemented},
	} {
		_, err := list(tc.req)
		wantCode(t, err, tc.code)
	}
}
