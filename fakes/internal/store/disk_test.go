package store

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func content(b []byte) Content {
	return Content{Parts: [][]byte{b}, Size: int64(len(b)), CRC32C: crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))}
}

// TestDiskReopen writes every kind of state to a store on disk, closes
// it, opens it again and checks that all of it is there: buckets and
// their attributes, notification configs and IAM policy, objects inline
// and in files, noncurrent versions, composed objects, appendable objects,
// usage and HMAC keys; and that a deleted object's file is removed.
func TestDiskReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.CreateBucket("keep", true, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateZonalBucket("zone", false); err != nil {
		t.Fatal(err)
	}
	gone, _ := s.CreateBucket("gone", false, false)
	if err := s.DeleteBucket(gone.Name()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.UpdateAttrs(nil, func(a *BucketAttrs) error { a.Labels = map[string]string{"k": "v"}; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AddNotification(Notification{Topic: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.SetPolicy(Policy{Bindings: []Binding{{Role: "r", Members: []string{"m"}}}}, ""); err != nil {
		t.Fatal(err)
	}
	key, err := s.CreateHMACKey("p", "sa@x")
	if err != nil {
		t.Fatal(err)
	}
	small := bytes.Repeat([]byte("s"), 100)
	large := bytes.Repeat([]byte("L"), InlineMax+1)
	names := map[string][]byte{"small": small, "large": large, "a\x00b": small}
	for n, c := range names {
		if _, err := b.Put(n, Attrs{ContentType: "x/" + n, Metadata: map[string]string{"m": n}}, content(c), nil, "t1"); err != nil {
			t.Fatal(err)
		}
	}
	// A second generation of "large" makes the first noncurrent.
	old, _ := b.Get("large", 0)
	if _, err := b.Put("large", Attrs{}, content(small), nil, "t1"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Compose("both", Attrs{}, []Source{{Name: "small"}, {Name: "large", Gen: old.Generation()}}, nil, "t2"); err != nil {
		t.Fatal(err)
	}
	// A deleted object in a file: its file goes.
	if _, err := b.Put("del", Attrs{}, content(large), nil, "t1"); err != nil {
		t.Fatal(err)
	}
	del, _ := b.Get("del", 0)
	if err := b.Remove("del", del.Generation(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Update("small", 0, nil, func(a *Attrs) error { a.CacheControl = "no"; return nil }); err != nil {
		t.Fatal(err)
	}
	z, _ := s.Bucket("zone")
	owner := new(int)
	ao, err := z.PutAppendable("app", Attrs{}, owner, nil, "t3")
	if err != nil {
		t.Fatal(err)
	}
	part := content([]byte("hello "))
	if _, ok := z.ReplaceAppendable("app", ao.Generation(), owner, part, false); !ok {
		t.Fatal("ReplaceAppendable failed")
	}
	// Only the tail is given: the first 6 bytes are persisted already.
	tail := content([]byte("world"))
	tail.Size = 11
	tail.CRC32C = crc32.Checksum([]byte("hello world"), crc32.MakeTable(crc32.Castagnoli))
	if _, ok := z.ReplaceAppendable("app", ao.Generation(), owner, tail, false); !ok {
		t.Fatal("ReplaceAppendable failed")
	}
	want := s.UsageByTenant()
	wantList, err := b.List(&ListQuery{Versions: true, PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Bucket("gone"); err == nil {
		t.Error("the deleted bucket is back")
	}
	b, err = s.Bucket("keep")
	if err != nil {
		t.Fatal(err)
	}
	if a := b.Attrs(); a.Labels["k"] != "v" || a.Metageneration != 2 || !a.Versioning {
		t.Errorf("attrs %+v", a)
	}
	if ns, _ := b.Notifications(); len(ns) != 1 || ns[0].Topic != "t" {
		t.Errorf("notifications %v", ns)
	}
	if p, _ := b.Policy(); len(p.Bindings) != 1 || p.Etag != PolicyEtag(2) {
		t.Errorf("policy %+v", p)
	}
	if k, err := s.HMACKey(key.AccessID); err != nil || k.ServiceAccount != "sa@x" {
		t.Errorf("HMAC key: %v %v", k, err)
	}
	if z, err := s.Bucket("zone"); err != nil || !z.Zonal() {
		t.Errorf("zonal bucket: %v", err)
	}
	got, err := b.List(&ListQuery{Versions: true, PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(names2(got.Objects)) != fmt.Sprint(names2(wantList.Objects)) {
		t.Errorf("listing %v, want %v", names2(got.Objects), names2(wantList.Objects))
	}
	for _, tc := range []struct {
		name string
		gen  int64
		want []byte
	}{
		{"small", 0, small},
		{"a\x00b", 0, small},
		{"large", 0, small},
		{"large", old.Generation(), large},
		{"both", 0, append(bytes.Clone(small), large...)},
	} {
		o, err := b.Get(tc.name, tc.gen)
		if err != nil {
			t.Errorf("%q#%d: %v", tc.name, tc.gen, err)
			continue
		}
		if !bytes.Equal(o.Bytes(), tc.want) {
			t.Errorf("%q#%d: %d bytes, not those written", tc.name, tc.gen, o.Size())
		}
	}
	if o, _ := b.Get("small", 0); o.Attrs().CacheControl != "no" || o.Metageneration() != 2 || o.Attrs().Metadata["m"] != "small" {
		t.Errorf("small: %+v", o.Attrs())
	}
	if o, _ := b.Get("both", 0); o.ComponentCount() != 2 || o.Tenant() != "t2" {
		t.Errorf("both: %d components, tenant %q", o.ComponentCount(), o.Tenant())
	}
	z, _ = s.Bucket("zone")
	a, err := z.Get("app", 0)
	if err != nil || string(a.Bytes()) != "hello world" || !a.Unfinalized() {
		t.Fatalf("app: %v %q", err, a.Bytes())
	}
	if o, _ := a.Appendable(); o != nil {
		t.Error("an owner survived the restart")
	}
	if got := s.UsageByTenant(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("usage %v, want %v", got, want)
	}
	// The deleted object's file is gone: the blobs left are those of the
	// two large generations, the composed object and the appendable one.
	blobs, _ := filepathGlob(dir)
	if len(blobs) != 3 {
		t.Errorf("%d blob files, want 3 (noncurrent large, both, app): %v", len(blobs), blobs)
	}
	if err := s.DeleteBucket("keep"); err == nil {
		t.Error("deleted a bucket that is not empty")
	}
}

func names2(os []*Object) []string {
	var out []string
	for _, o := range os {
		out = append(out, fmt.Sprintf("%q#%d/%d", o.Name(), o.Generation(), o.Size()))
	}
	return out
}

func filepathGlob(dir string) ([]string, error) {
	return filepath.Glob(filepath.Join(dir, "blobs", "*"))
}

// TestDiskCloseInFlight closes a store on disk while writers and readers
// use it: the calls in flight finish, later ones fail with an error, and
// none panics on the closed database.
func TestDiskCloseInFlight(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.CreateBucket("close", false, false)
	done := make(chan error, 4)
	for w := range 4 {
		go func() {
			for i := 0; ; i++ {
				n := fmt.Sprintf("w%d/%d", w, i)
				if _, err := b.Put(n, Attrs{}, content([]byte(n)), nil, ""); err != nil {
					done <- err
					return
				}
				if _, err := b.List(&ListQuery{PageSize: 10}); err != nil {
					done <- err
					return
				}
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if err := <-done; !strings.Contains(err.Error(), "closed") {
			t.Errorf("after Close: %v", err)
		}
	}
}

// TestDiskReadAfterOverwrite reads an object in a file that was
// overwritten and deleted since it was got: its content stays readable
// for blobGrace, as an object in memory stays readable to a reader that
// holds it.
func TestDiskReadAfterOverwrite(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b, _ := s.CreateBucket("grace", false, false)
	large := bytes.Repeat([]byte("g"), InlineMax+10)
	if _, err := b.Put("o", Attrs{}, content(large), nil, ""); err != nil {
		t.Fatal(err)
	}
	o, _ := b.Get("o", 0)
	if _, err := b.Put("o", Attrs{}, content(large[:5]), nil, ""); err != nil {
		t.Fatal(err)
	}
	if err := b.Remove("o", 0, nil); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := o.WriteRange(&buf, 0, o.Size()); err != nil || !bytes.Equal(buf.Bytes(), large) || !bytes.Equal(o.Bytes(), large) {
		t.Fatalf("read after the overwrite: %v, %d bytes", err, buf.Len())
	}
}
