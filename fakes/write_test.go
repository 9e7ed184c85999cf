package fakes_test

import (
	"crypto/md5"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/internal/wire"
)

func TestWriteObjectOneShot(t *testing.T) {
	srv, cc := start(t)
	for _, tc := range []struct {
		name  string
		size  int
		chunk int
		crc   bool // per-message CRC32C
	}{
		{"empty", 0, 2 * mib, true},
		{"one byte", 1, 2 * mib, true},
		{"1KiB no CRC", 1 << 10, 2 * mib, false},
		{"2MiB+1 in two messages", 2*mib + 1, 2 * mib, true},
		{"1MiB in odd messages", mib, 100_003, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "one-shot/" + tc.name
			data := payload(tc.size, byte(tc.size))
			msgs := chunks(data, tc.chunk, withSpec(spec(name)))
			if !tc.crc {
				for _, m := range msgs {
					m.GetChecksummedData().Crc32C = nil
				}
			}
			resp, err := writeObject(ctxT(t), cc, msgs...)
			if err != nil {
				t.Fatal(err)
			}
			obj := resp.GetResource()
			sum := md5.Sum(data)
			if obj.GetName() != name || obj.GetBucket() != bucketRes || obj.GetSize() != int64(tc.size) ||
				obj.GetChecksums().GetCrc32C() != crcOf(data) || string(obj.GetChecksums().GetMd5Hash()) != string(sum[:]) {
				t.Fatalf("resource = %v", obj)
			}
			sameBytes(t, "gRPC read", get(t, cc, name), data)
			got, code := httpGet(t, srv, name)
			if code != 200 {
				t.Fatalf("HTTP read: status %d", code)
			}
			sameBytes(t, "HTTP read", got, data)
		})
	}
}

func TestWriteAttributes(t *testing.T) {
	_, cc := start(t)
	custom := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	s := spec("attrs")
	s.Resource.ContentType = "text/plain"
	s.Resource.ContentEncoding = "gzip"
	s.Resource.ContentDisposition = "attachment"
	s.Resource.ContentLanguage = "en"
	s.Resource.CacheControl = "no-cache"
	s.Resource.StorageClass = "NEARLINE"
	s.Resource.Metadata = map[string]string{"a": "1", "b": "2"}
	s.Resource.CustomTime = timestamppb.New(custom)
	before := time.Now().Add(-time.Second)
	data := []byte("hello")
	resp, err := writeObject(ctxT(t), cc, chunks(data, 2*mib, withSpec(s))...)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []*wire.Object{resp.GetResource(), mustGet(t, cc, "attrs")} {
		want := &wire.Object{
			Name: "attrs", Bucket: bucketRes, Size: 5, ContentType: "text/plain", ContentEncoding: "gzip",
			ContentDisposition: "attachment", ContentLanguage: "en", CacheControl: "no-cache", StorageClass: "NEARLINE",
			Metadata: map[string]string{"a": "1", "b": "2"}, Metageneration: 1,
		}
		got := clone(obj)
		if got.Generation <= 0 || !got.GetCreateTime().AsTime().After(before) || !got.GetUpdateTime().AsTime().Equal(got.GetCreateTime().AsTime()) {
			t.Errorf("generation %d, create %v, update %v", got.Generation, got.GetCreateTime().AsTime(), got.GetUpdateTime().AsTime())
		}
		if !got.GetCustomTime().AsTime().Equal(custom) {
			t.Errorf("custom time %v, want %v", got.GetCustomTime().AsTime(), custom)
		}
		if got.GetChecksums().GetCrc32C() != crcOf(data) || len(got.GetChecksums().GetMd5Hash()) != 16 || got.Etag == "" {
			t.Errorf("checksums %v etag %q", got.Checksums, got.Etag)
		}
		got.Generation, got.CreateTime, got.UpdateTime, got.FinalizeTime, got.UpdateStorageClassTime, got.CustomTime, got.Checksums, got.Etag = 0, nil, nil, nil, nil, nil, nil, ""
		if !proto.Equal(got, want) {
			t.Errorf("got %v\nwant %v", got, want)
		}
	}
}

func mustGet(t *testing.T, cc *grpc.ClientConn, name string) *wire.Object {
	t.Helper()
	obj, err := getObject(ctxT(t), cc, &wire.GetObjectRequest{Bucket: bucketRes, Object: name})
	if err != nil {
		t.Fatalf("GetObject %s: %v", name, err)
	}
	return obj
}

func TestGenerations(t *testing.T) {
	_, cc := start(t)
	a := put(t, cc, "gen", []byte("one"))
	b := put(t, cc, "gen", []byte("two"))
	if b.Generation <= a.Generation {
		t.Fatalf("generation went from %d to %d", a.Generation, b.Generation)
	}
	sameBytes(t, "live", get(t, cc, "gen"), []byte("two"))
}

func TestWriteRejects(t *testing.T) {
	srv, cc := start(t)
	put(t, cc, "exists", []byte("old"))
	existing := mustGet(t, cc, "exists")
	data := payload(3*mib, 1)
	i64 := func(v int64) *int64 { return &v }
	bad := uint32(1)

	for _, tc := range []struct {
		name   string
		object string
		code   codes.Code
		edit   func([]*wire.WriteObjectRequest) []*wire.WriteObjectRequest
	}{
		{"message CRC32C", "", codes.DataLoss, func(m []*wire.WriteObjectRequest) []*wire.WriteObjectRequest {
			*m[1].GetChecksummedData().Crc32C ^= 1
			return m
		}},
		{"object CRC32C", "", codes.DataLoss, func(m []*wire.WriteObjectRequest) []*wire.WriteObjectRequest {
			m[1].ObjectChecksums.Crc32C = &bad
			return m
		}},
		{"object MD5", "", codes.DataLoss, func(m []*wire.WriteObjectRequest) []*wire.WriteObjectRequest {
			m[1].ObjectChecksums.Md5Hash = make([]byte, 16)
			return m
		}},
		{"gap", "", codes.InvalidArgument, func(m []*wire.WriteObjectRequest) []*wire.WriteObjectRequest {
			m[1].WriteOffset++
			return m
		}},
		{"overlap", "", codes.InvalidArgument, func(m []*wire.WriteObjectRequest) []*wire.WriteObjectRequest {
			m[1].WriteOffset--
			return m
		}},
		{"finish at the wrong offset", "", codes.InvalidArgument, func(m []*wire.WriteObjectRequest) []*wire.WriteObjectRequest {
			// All data sent, then a data-less finish_write that claims less.
			m[1].FinishWrite = false
			return append(m, &wire.WriteObjectRequest{WriteOffset: 2 * mib, FinishWrite: true})
		}},
		{"finish without the last message", "", codes.InvalidArgument, func(m []*wire.WriteObjectRequest) []*wire.WriteObjectRequest {
			// The client drops its last message but finishes at the
			// right offset: the fake must not store a shorter object.
			return []*wire.WriteObjectRequest{m[0], {WriteOffset: 3 * mib, FinishWrite: true}}
		}},
		{"no finish_write", "", codes.InvalidArgument, func(m []*wire.WriteObjectRequest) []*wire.WriteObjectRequest {
			m[1].FinishWrite = false
			return m
		}},
		{"object_size larger", "", codes.InvalidArgument, func(m []*wire.WriteObjectRequest) []*wire.WriteObjectRequest {
			m[0].GetWriteObjectSpec().ObjectSize = i64(3*mib + 1)
			return m
		}},
		{"object_size smaller", "", codes.InvalidArgument, func(m []*wire.WriteObjectRequest) []*wire.WriteObjectRequest {
			m[0].GetWriteObjectSpec().ObjectSize = i64(3*mib - 1)
			return m
		}},
		{"message over 2 MiB", "", codes.InvalidArgument, func(m []*wire.WriteObjectRequest) []*wire.WriteObjectRequest {
			d := payload(2*mib+1, 2)
			crc := crcOf(d)
			m[0].Data = &wire.WriteObjectRequest_ChecksummedData{ChecksummedData: &wire.ChecksummedData{Content: d, Crc32C: &crc}}
			return m[:1]
		}},
		{"message of 5 MiB", "", codes.InvalidArgument, func(m []*wire.WriteObjectRequest) []*wire.WriteObjectRequest {
			d := payload(5*mib, 2)
			m[0].Data = &wire.WriteObjectRequest_ChecksummedData{ChecksummedData: &wire.ChecksummedData{Content: d}}
			return m[:1]
		}},
		{"no first message", "", codes.InvalidArgument, func(m []*wire.WriteObjectRequest) []*wire.WriteObjectRequest {
			m[0].FirstMessage = nil
			return m
		}},
		{"first message twice", "", codes.InvalidArgument, func(m []*wire.WriteObjectRequest) []*wire.WriteObjectRequest {
			m[1].FirstMessage = m[0].FirstMessage
			return m
		}},
		{"unknown upload_id", "", codes.NotFound, func(m []*wire.WriteObjectRequest) []*wire.WriteObjectRequest {
			withUpload("nope")(m[0])
			return m
		}},
		{"appendable", "", codes.InvalidArgument, func(m []*wire.WriteObjectRequest) []*wire.WriteObjectRequest {
			m[0].GetWriteObjectSpec().Appendable = proto.Bool(true)
			return m
		}},
		{"encryption key", "", codes.Unimplemented, func(m []*wire.WriteObjectRequest) []*wire.WriteObjectRequest {
			m[0].CommonObjectRequestParams = &wire.CommonObjectRequestParams{EncryptionAlgorithm: "AES256", EncryptionKeyBytes: make([]byte, 32)}
			return m
		}},
		{"unknown bucket", "", codes.NotFound, func(m []*wire.WriteObjectRequest) []*wire.WriteObjectRequest {
			m[0].GetWriteObjectSpec().Resource.Bucket = "projects/_/buckets/no-such-bucket"
			return m
		}},
		{"bucket not a resource name", "", codes.InvalidArgument, func(m []*wire.WriteObjectRequest) []*wire.WriteObjectRequest {
			m[0].GetWriteObjectSpec().Resource.Bucket = bucket
			return m
		}},
		{"no resource", "", codes.InvalidArgument, func(m []*wire.WriteObjectRequest) []*wire.WriteObjectRequest {
			m[0].GetWriteObjectSpec().Resource = nil
			return m
		}},
		{"if_generation_match=0 on an existing object", "exists", codes.FailedPrecondition, func(m []*wire.WriteObjectRequest) []*wire.WriteObjectRequest {
			m[0].GetWriteObjectSpec().IfGenerationMatch = i64(0)
			return m
		}},
		{"if_generation_match wrong", "exists", codes.FailedPrecondition, func(m []*wire.WriteObjectRequest) []*wire.WriteObjectRequest {
			m[0].GetWriteObjectSpec().IfGenerationMatch = i64(existing.Generation + 1)
			return m
		}},
		{"if_generation_not_match live", "exists", codes.FailedPrecondition, func(m []*wire.WriteObjectRequest) []*wire.WriteObjectRequest {
			m[0].GetWriteObjectSpec().IfGenerationNotMatch = i64(existing.Generation)
			return m
		}},
		{"if_metageneration_match wrong", "exists", codes.FailedPrecondition, func(m []*wire.WriteObjectRequest) []*wire.WriteObjectRequest {
			m[0].GetWriteObjectSpec().IfMetagenerationMatch = i64(2)
			return m
		}},
		{"if_metageneration_match on a missing object", "", codes.FailedPrecondition, func(m []*wire.WriteObjectRequest) []*wire.WriteObjectRequest {
			m[0].GetWriteObjectSpec().IfMetagenerationMatch = i64(1)
			return m
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.object
			if name == "" {
				name = "rejected/" + strings.ReplaceAll(tc.name, " ", "-")
			}
			msgs := tc.edit(chunks(data, 2*mib, withSpec(spec(name))))
			_, err := writeObject(ctxT(t), cc, msgs...)
			wantCode(t, err, tc.code)
			if name == "exists" {
				sameBytes(t, "untouched object", get(t, cc, name), []byte("old"))
			} else {
				absent(t, cc, name)
			}
		})
	}
	if got, _ := httpGet(t, srv, "exists"); string(got) != "old" {
		t.Fatalf("over HTTP: %q", got)
	}
}

func TestWritePreconditionsPass(t *testing.T) {
	_, cc := start(t)
	i64 := func(v int64) *int64 { return &v }
	s := spec("p")
	s.IfGenerationMatch = i64(0)
	resp, err := writeObject(ctxT(t), cc, chunks([]byte("v1"), 2*mib, withSpec(s))...)
	if err != nil {
		t.Fatalf("if_generation_match=0 on a new object: %v", err)
	}
	gen := resp.GetResource().GetGeneration()
	for _, edit := range []func(*wire.WriteObjectSpec){
		func(s *wire.WriteObjectSpec) { s.IfGenerationMatch = i64(gen) },
		func(s *wire.WriteObjectSpec) { s.IfGenerationNotMatch = i64(gen + 1000) },
		func(s *wire.WriteObjectSpec) { s.IfMetagenerationMatch = i64(1) },
		func(s *wire.WriteObjectSpec) { s.IfMetagenerationNotMatch = i64(2) },
	} {
		s := spec("p")
		edit(s)
		resp, err := writeObject(ctxT(t), cc, chunks([]byte("v2"), 2*mib, withSpec(s))...)
		if err != nil {
			t.Fatalf("%v: %v", s, err)
		}
		gen = resp.GetResource().GetGeneration()
	}
}

func TestObjectNames(t *testing.T) {
	_, cc := start(t)
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"", false},
		{".", false},
		{"..", false},
		{"a\nb", false},
		{"a\rb", false},
		{".well-known/acme-challenge/x", false},
		{strings.Repeat("x", 1025), false},
		{strings.Repeat("x", 1024), true},
		{"a/./b", true},
		{".well-known/other", true},
		{"ünïcødé/😀", true},
		{"with space and #?[]*", true},
	} {
		t.Run(tc.name[:min(len(tc.name), 20)], func(t *testing.T) {
			_, err := writeObject(ctxT(t), cc, chunks([]byte("x"), 2*mib, withSpec(spec(tc.name)))...)
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				sameBytes(t, "read", get(t, cc, tc.name), []byte("x"))
				return
			}
			wantCode(t, err, codes.InvalidArgument)
			_, err = getObject(ctxT(t), cc, &wire.GetObjectRequest{Bucket: bucketRes, Object: tc.name})
			wantCode(t, err, codes.InvalidArgument)
		})
	}
}

// TestCommitDelay: with WithCommitDelay, a write is answered only once its
// object is stored, after the delay, over both APIs.
func TestCommitDelay(t *testing.T) {
	const delay = 100 * time.Millisecond
	srv, cc := start(t, fakes.WithCommitDelay(delay))
	data := payload(3000, 5)
	t0 := time.Now()
	put(t, cc, "slow-grpc", data)
	httpPut(t, srv, "slow-json", data)
	if d := time.Since(t0); d < 2*delay {
		t.Fatalf("two writes answered in %v, before their commit delays of %v each", d, delay)
	}
	for _, name := range []string{"slow-grpc", "slow-json"} {
		sameBytes(t, name, get(t, cc, name), data)
	}
}
