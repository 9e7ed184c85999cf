package mpu

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/objup/objup/fakes/internal/store"
)

// TestList pages through a bucket's uploads by key and upload ID markers,
// with and without a prefix, in memory and on disk.
func TestList(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		r, err := Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]string{}
		for _, k := range []string{"b/1", "a", "b/1", "b/2", "c"} {
			u, err := r.Create("bkt", k, store.Attrs{})
			if err != nil {
				t.Fatal(err)
			}
			ids[k] = u.ID // the last of b/1's
		}
		r.Create("other", "a", store.Attrs{})
		first, _ := r.List("bkt", "b/", "", "", 1)
		for _, tc := range []struct {
			name                      string
			prefix, keyMarker, marker string
			max                       int
			want                      string
		}{
			{"all", "", "", "", 10, "a b/1 b/1 b/2 c"},
			{"prefix", "b/", "", "", 10, "b/1 b/1 b/2"},
			{"max", "", "", "", 2, "a b/1 +"},
			{"after a key", "", "b/1", "", 10, "b/2 c"},
			{"after an upload", "", "b/1", first[0].ID, 10, "b/1 b/2 c"},
			{"after the last upload of a key", "", "b/1", ids["b/1"], 10, "b/2 c"},
			{"a prefix past the marker", "c", "a", "", 10, "c"},
		} {
			got, more := r.List("bkt", tc.prefix, tc.keyMarker, tc.marker, tc.max)
			var keys []string
			for _, u := range got {
				keys = append(keys, u.Object)
			}
			if more {
				keys = append(keys, "+")
			}
			if s := strings.Join(keys, " "); s != tc.want {
				t.Errorf("%q %s: got %q, want %q", dir, tc.name, s, tc.want)
			}
		}
	}
}

// TestPutAndComplete: a part replaces the one of its number, a part cut
// short is not kept, and a complete hands over the listed parts in order,
// then ends the upload.
func TestPutAndComplete(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		r, _ := Open(dir, nil)
		u, _ := r.Create("bkt", "o", store.Attrs{})
		ok := func(*Part) error { return nil }
		big := bytes.Repeat([]byte{7}, MinPartSize)
		if _, err := u.Put(1, strings.NewReader("x"), 1, ok); err != nil {
			t.Fatal(err)
		}
		p1, _ := u.Put(1, bytes.NewReader(big), -1, ok)
		p2, _ := u.Put(2, strings.NewReader("tail"), 4, ok)
		if _, err := u.Put(3, strings.NewReader("cut"), 10, ok); !errors.Is(err, ErrBodyEnded) {
			t.Fatalf("a part cut short: %v", err)
		}
		if _, err := u.Put(3, strings.NewReader("no"), 2, func(*Part) error { return errors.New("digest") }); err == nil {
			t.Fatal("a refused part was kept")
		}
		if parts, _ := u.Parts(); len(parts) != 2 || parts[0].Size != MinPartSize {
			t.Fatalf("parts %+v", parts)
		}
		var size int64
		err := u.Complete([]Ref{{1, p1.ETag()}, {2, strings.Trim(p2.ETag(), `"`)}}, func(c store.Content) error {
			size = c.Size
			return nil
		})
		if err != nil || size != MinPartSize+4 {
			t.Fatalf("complete: %v, %d bytes", err, size)
		}
		if err := u.Abort(); err == nil || len(r.All()) != 0 {
			t.Fatalf("after the complete: abort %v, uploads %d", err, len(r.All()))
		}
	}
}

// TestCompleteKilled: a fake killed between the store's write of a
// complete and the removal of the upload's files finds, at its restart,
// the upload gone when the store holds its object, and in progress, parts
// and all, when the store does not: a complete is applied once.
func TestCompleteKilled(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stored bool
	}{{"stored", true}, {"not stored", false}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r, err := Open(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			u, err := r.Create("bkt", "obj", store.Attrs{})
			if err != nil {
				t.Fatal(err)
			}
			data := bytes.Repeat([]byte("x"), 1000)
			if _, err := u.Put(1, bytes.NewReader(data), int64(len(data)), func(*Part) error { return nil }); err != nil {
				t.Fatal(err)
			}
			// The kill: the note is written, the store's write done or
			// not, the directory not removed.
			if _, err := u.completing(int64(len(data)), 0x1234); err != nil {
				t.Fatal(err)
			}
			var asked []string
			r2, err := Open(dir, func(bucket, object string, size int64, crc uint32, since int64) bool {
				asked = append(asked, bucket+"/"+object)
				return tc.stored && size == int64(len(data)) && crc == 0x1234 && since > 0
			})
			if err != nil {
				t.Fatal(err)
			}
			_, ok := r2.Get(u.ID)
			if ok == tc.stored || len(asked) != 1 {
				t.Fatalf("upload in progress after the restart: %v (the store asked %v)", ok, asked)
			}
			if !ok {
				return
			}
			// Not stored: the upload goes on, its note gone.
			r3, err := Open(dir, func(string, string, int64, uint32, int64) bool {
				t.Fatal("asked again: the note was kept")
				return false
			})
			if err != nil {
				t.Fatal(err)
			}
			u3, ok := r3.Get(u.ID)
			if parts, _ := u3.Parts(); !ok || len(parts) != 1 {
				t.Fatalf("upload %v with parts %v after a second restart", ok, parts)
			}
		})
	}
}
