package tree_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/objup/objup/cmd/objup/tree"
	"github.com/objup/objup/fakes"
	"github.com/objup/objup/uploader"
)

func TestObjectName(t *testing.T) {
	for _, tc := range []struct{ prefix, rel, want string }{
		{"", "a.txt", "a.txt"},
		{"", "d/a.txt", "d/a.txt"},
		{"p", "a.txt", "p/a.txt"},
		{"p/", "a.txt", "p/a.txt"},
		{"x/y", "d/e/a.txt", "x/y/d/e/a.txt"},
		{"x/y/", "d/a.txt", "x/y/d/a.txt"},
	} {
		if got := tree.ObjectName(tc.prefix, tc.rel); got != tc.want {
			t.Errorf("ObjectName(%q, %q) = %q, want %q", tc.prefix, tc.rel, got, tc.want)
		}
	}
}

// names returns the names of the live objects under prefix.
func names(t *testing.T, srv *fakes.Server, prefix string) []string {
	t.Helper()
	objs, err := srv.ListObjects(bucket, prefix)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, o.Name)
	}
	return out
}

func TestUploadNames(t *testing.T) {
	e := newEnv(t)
	dir := mkTree(t, map[string]int{"a.txt": 10, "d/b.txt": 0, "d/e/c.bin": 300 << 10})
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"", []string{"a.txt", "d/b.txt", "d/e/c.bin"}},
		{"p1", []string{"p1/a.txt", "p1/d/b.txt", "p1/d/e/c.bin"}},
		{"p2/", []string{"p2/a.txt", "p2/d/b.txt", "p2/d/e/c.bin"}},
		{"x/y", []string{"x/y/a.txt", "x/y/d/b.txt", "x/y/d/e/c.bin"}},
	} {
		t.Run(tc.prefix, func(t *testing.T) {
			sum, err := tree.Upload(context.Background(), e.c, dir, bucket, tc.prefix, tree.Options{JournalDir: e.jdir})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Files != 3 || sum.Uploaded != 3 || !sum.OK() {
				t.Errorf("summary %+v", sum)
			}
			got := names(t, e.srv, tc.prefix)
			if tc.prefix == "" {
				got = slices.DeleteFunc(got, func(n string) bool {
					return strings.Count(n, "/") > 2 || strings.HasPrefix(n, "p") || strings.HasPrefix(n, "x")
				})
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("objects %q, want %q", got, tc.want)
			}
			checkOneGeneration(t, e.srv, dir, tc.prefix, []string{"a.txt", "d/b.txt", "d/e/c.bin"})
		})
	}
}

func TestFilter(t *testing.T) {
	e := newEnv(t)
	dir := mkTree(t, map[string]int{"keep.txt": 1, "drop.tmp": 1, "skip/x.txt": 1, "sub/keep.txt": 1, "sub/drop.tmp": 1})
	var seen []string
	filter := func(rel string, isDir bool) bool {
		seen = append(seen, rel)
		if isDir {
			return rel != "skip"
		}
		return !strings.HasSuffix(rel, ".tmp")
	}
	sum, err := tree.Upload(context.Background(), e.c, dir, bucket, "f", tree.Options{JournalDir: e.jdir, Filter: filter})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"f/keep.txt", "f/sub/keep.txt"}; !slices.Equal(names(t, e.srv, "f/"), want) {
		t.Errorf("objects %q, want %q", names(t, e.srv, "f/"), want)
	}
	if sum.Files != 2 {
		t.Errorf("Files = %d, want 2", sum.Files)
	}
	if slices.Contains(seen, "skip/x.txt") {
		t.Errorf("the filter saw a file of a directory it left out: %q", seen)
	}
}

func TestSymlinks(t *testing.T) {
	e := newEnv(t)
	dir := mkTree(t, map[string]int{"real/a.txt": 5, "top.txt": 3})
	other := mkTree(t, map[string]int{"o.txt": 7})
	for _, l := range []struct{ target, name string }{
		{filepath.Join(dir, "top.txt"), "link.txt"}, // a link to a file
		{other, "linkdir"},                          // a link to a directory outside
		{dir, "real/loop"},                          // a cycle
		{filepath.Join(dir, "missing"), "dangling"}, // points nowhere
	} {
		if err := os.Symlink(l.target, filepath.Join(dir, l.name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		follow  bool
		prefix  string
		want    []string
		skipped []string
	}{
		{false, "nofollow", []string{"nofollow/real/a.txt", "nofollow/top.txt"}, []string{"dangling", "link.txt", "linkdir", "real/loop"}},
		{true, "follow", []string{"follow/link.txt", "follow/linkdir/o.txt", "follow/real/a.txt", "follow/top.txt"}, []string{"dangling", "real/loop"}},
	} {
		t.Run(tc.prefix, func(t *testing.T) {
			var ev events
			_, err := tree.Upload(context.Background(), e.c, dir, bucket, tc.prefix, tree.Options{JournalDir: e.jdir, FollowSymlinks: tc.follow, OnEvent: ev.on})
			if err != nil {
				t.Fatal(err)
			}
			if got := names(t, e.srv, tc.prefix+"/"); !slices.Equal(got, tc.want) {
				t.Errorf("objects %q, want %q", got, tc.want)
			}
			if got := ev.of(tree.Skipped); !slices.Equal(got, tc.skipped) {
				t.Errorf("skipped %q, want %q", got, tc.skipped)
			}
		})
	}
}

func TestSecondRunSendsNothing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		compare tree.Compare
		touch   bool // change the modification times between the runs
		resent  int  // files sent again
	}{
		{"size-mtime", tree.CompareSizeModTime, false, 0},
		{"size-mtime/touched", tree.CompareSizeModTime, true, 3},
		{"checksum", tree.CompareChecksum, false, 0},
		{"checksum/touched", tree.CompareChecksum, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			files := map[string]int{"a": 100, "b/c": 1 << 20, "b/d": 0}
			dir := mkTree(t, files)
			opts := tree.Options{JournalDir: e.jdir, Compare: tc.compare}
			if _, err := tree.Upload(context.Background(), e.c, dir, bucket, "s", opts); err != nil {
				t.Fatal(err)
			}
			if tc.touch {
				later := time.Now().Add(time.Hour)
				for rel := range files {
					if err := os.Chtimes(filepath.Join(dir, rel), later, later); err != nil {
						t.Fatal(err)
					}
				}
			}
			e.srv.ResetCalls()
			var ev events
			opts.OnEvent = ev.on
			sum, err := tree.Upload(context.Background(), e.c, dir, bucket, "s", opts)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Uploaded != tc.resent || sum.Unchanged != 3-tc.resent || !sum.OK() {
				t.Errorf("summary %+v, want %d uploaded", sum, tc.resent)
			}
			if tc.resent == 0 && writes(e.srv) != 0 {
				t.Errorf("the second run made %d write calls: %+v", writes(e.srv), e.srv.CallCounts())
			}
			if len(ev.of(tree.Started)) != tc.resent {
				t.Errorf("started %q", ev.of(tree.Started))
			}
			vs := versions(t, e.srv.HTTPURL(), bucket, "s/")
			want := 1
			if tc.resent > 0 {
				want = 2 // the same bytes, sent again under GenerationMatch
			}
			for name, v := range vs {
				if len(v) != want {
					t.Errorf("%s: %d generations, want %d", name, len(v), want)
				}
			}
		})
	}
}

func TestKilledRun(t *testing.T) {
	// A killed run left a start record and no done record for each file;
	// what it stored differs from file to file.
	for _, tc := range []struct {
		name    string
		stored  string // "": nothing; "same": the file's bytes; "other": other bytes
		size    int
		found   int
		gens    int // generations at the end
		content string
	}{
		{"stored", "same", 1000, 1, 1, ""},
		{"stored/large", "same", 700 << 10, 1, 1, ""},
		{"not-stored", "", 1000, 0, 1, ""},
		{"other-bytes", "other", 1000, 0, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			dir := mkTree(t, map[string]int{"f": tc.size})
			path := filepath.Join(dir, "f")
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := tree.RecordStart(e.jdir, dir, bucket, "k", "f", fi.Size(), fi.ModTime().UnixNano(), 0); err != nil {
				t.Fatal(err)
			}
			content, _ := os.ReadFile(path)
			switch tc.stored {
			case "same":
			case "other":
				content = []byte("someone else's bytes")
			default:
				content = nil
			}
			if content != nil {
				if _, err := e.srv.PutObject(fakes.Object{ObjectAttrs: fakes.ObjectAttrs{Bucket: bucket, Name: "k/f"}, Content: content}); err != nil {
					t.Fatal(err)
				}
			}
			var ev events
			sum, err := tree.Upload(context.Background(), e.c, dir, bucket, "k", tree.Options{JournalDir: e.jdir, OnEvent: ev.on})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Found != tc.found || !sum.OK() {
				t.Errorf("summary %+v, want %d found", sum, tc.found)
			}
			v := versions(t, e.srv.HTTPURL(), bucket, "k/")["k/f"]
			if len(v) != tc.gens {
				t.Fatalf("%d generations %+v, want %d", len(v), v, tc.gens)
			}
			crc, size := crcOf(t, path)
			if last := v[len(v)-1]; last.Size != size || last.CRC32C != crc {
				t.Errorf("stored %+v, want size %d crc %08x", last, size, crc)
			}
			// A third run sends nothing.
			e.srv.ResetCalls()
			sum, err = tree.Upload(context.Background(), e.c, dir, bucket, "k", tree.Options{JournalDir: e.jdir})
			if err != nil || sum.Unchanged != 1 || writes(e.srv) != 0 {
				t.Errorf("third run: %+v, %v, %d writes", sum, err, writes(e.srv))
			}
		})
	}
}

func TestChangedBetweenRuns(t *testing.T) {
	e := newEnv(t)
	dir := mkTree(t, map[string]int{"small": 100, "large": 600 << 10, "same": 10})
	opts := tree.Options{JournalDir: e.jdir}
	if _, err := tree.Upload(context.Background(), e.c, dir, bucket, "c", opts); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"small", "large"} {
		p := filepath.Join(dir, rel)
		b, _ := os.ReadFile(p)
		b[0]++
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		later := time.Now().Add(time.Minute)
		_ = os.Chtimes(p, later, later)
	}
	sum, err := tree.Upload(context.Background(), e.c, dir, bucket, "c", opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Uploaded != 2 || sum.Unchanged != 1 {
		t.Errorf("summary %+v", sum)
	}
	vs := versions(t, e.srv.HTTPURL(), bucket, "c/")
	for rel, want := range map[string]int{"small": 2, "large": 2, "same": 1} {
		v := vs["c/"+rel]
		if len(v) != want {
			t.Errorf("%s: %d generations, want %d", rel, len(v), want)
			continue
		}
		crc, size := crcOf(t, filepath.Join(dir, rel))
		if last := v[len(v)-1]; last.Size != size || last.CRC32C != crc || !last.Live {
			t.Errorf("%s: live %+v, want size %d crc %08x", rel, last, size, crc)
		}
	}
}

func TestCancelledRunFinishes(t *testing.T) {
	// Runs cancelled at a moment of their upload, then a run to the end:
	// every object is stored once and exactly, and no temporary object is
	// left.
	e := newEnv(t)
	files := map[string]int{"big1": 3 << 20, "big2": 5 << 20, "par": 6 << 20}
	for i := range 40 {
		files["small/"+string(rune('a'+i%26))+strings.Repeat("x", i/26)] = 1000 + i*100
	}
	dir := mkTree(t, files)
	opts := tree.Options{JournalDir: e.jdir, ParallelThreshold: 4 << 20, Parallel: uploader.ParallelUpload{PartSize: 1 << 20}, Concurrency: 8}
	for round := range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		seen := 0
		opts.OnEvent = func(ev tree.Event) {
			if ev.Kind == tree.Progressed || ev.Kind == tree.Done {
				if seen++; seen == 5+round*7 {
					cancel()
				}
			}
		}
		sum, err := tree.Upload(ctx, e.c, dir, bucket, "x", opts)
		cancel()
		hs, _ := e.journal.Handles()
		t.Logf("round %d: uploaded %d (resumed %d), found %d, unchanged %d, failed %d, not started %d; %d journal entries; %v",
			round, sum.Uploaded, sum.Resumed, sum.Found, sum.Unchanged, len(sum.Failed), sum.NotStarted, len(hs), err)
	}
	opts.OnEvent = nil
	sum, err := tree.Upload(context.Background(), e.c, dir, bucket, "x", opts)
	t.Logf("last run: uploaded %d (resumed %d), found %d, unchanged %d", sum.Uploaded, sum.Resumed, sum.Found, sum.Unchanged)
	if err != nil || !sum.OK() {
		t.Fatalf("last run: %+v, %v", sum, err)
	}
	var rels []string
	for rel := range files {
		rels = append(rels, rel)
	}
	checkOneGeneration(t, e.srv, dir, "x", rels)
	if tmp := names(t, e.srv, "objup-tmp/"); len(tmp) != 0 {
		t.Errorf("temporary objects left: %q", tmp)
	}
	if hs, _ := e.journal.Handles(); len(hs) != 0 {
		t.Errorf("journal entries left: %+v", hs)
	}
}

func TestFailurePolicy(t *testing.T) {
	for _, tc := range []struct {
		name string
		cont bool
	}{{"stop", false}, {"continue", true}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			files := map[string]int{"a\nbad": 1} // no object name may hold a line feed
			for i := range 20 {
				files[string(rune('b'+i))] = 10
			}
			dir := mkTree(t, files)
			sum, err := tree.Upload(context.Background(), e.c, dir, bucket, "p", tree.Options{JournalDir: e.jdir, Concurrency: 1, ContinueOnError: tc.cont})
			var fe *tree.FileError
			if !errors.As(err, &fe) || fe.Path != "a\nbad" {
				t.Fatalf("error %v, want the FileError of a\\nbad", err)
			}
			if len(sum.Failed) != 1 || sum.OK() {
				t.Errorf("summary %+v", sum)
			}
			if tc.cont && (sum.Uploaded != 20 || sum.NotStarted != 0) {
				t.Errorf("continue: summary %+v, want 20 uploaded", sum)
			}
			if !tc.cont && (sum.NotStarted == 0 || sum.Uploaded+sum.NotStarted+1 != sum.Files) {
				t.Errorf("stop: summary %+v, want the files after the failure not started", sum)
			}
		})
	}
}

func TestSkipExisting(t *testing.T) {
	e := newEnv(t)
	dir := mkTree(t, map[string]int{"a": 10, "b": 20})
	if _, err := e.srv.PutObject(fakes.Object{ObjectAttrs: fakes.ObjectAttrs{Bucket: bucket, Name: "n/a"}, Content: []byte("theirs")}); err != nil {
		t.Fatal(err)
	}
	var ev events
	sum, err := tree.Upload(context.Background(), e.c, dir, bucket, "n", tree.Options{JournalDir: e.jdir, SkipExisting: true, OnEvent: ev.on})
	if err != nil || sum.Existing != 1 || sum.Uploaded != 1 || !sum.OK() {
		t.Fatalf("%+v, %v", sum, err)
	}
	if o, _ := e.srv.Object(bucket, "n/a"); string(o.Content) != "theirs" {
		t.Errorf("n/a was overwritten")
	}
	// Without SkipExisting, it is overwritten, once.
	sum, err = tree.Upload(context.Background(), e.c, dir, bucket, "n", tree.Options{JournalDir: e.jdir})
	if err != nil || sum.Uploaded != 1 || sum.Unchanged != 1 {
		t.Fatalf("%+v, %v", sum, err)
	}
	if v := versions(t, e.srv.HTTPURL(), bucket, "n/")["n/a"]; len(v) != 2 {
		t.Errorf("n/a: %d generations, want theirs and ours", len(v))
	}
	checkOneGeneration(t, e.srv, dir, "n", []string{"b"})
}

func TestUploadFile(t *testing.T) {
	e := newEnv(t)
	dir := mkTree(t, map[string]int{"one": 2 << 20})
	path := filepath.Join(dir, "one")
	for run := range 2 {
		sum, err := tree.UploadFile(context.Background(), e.c, path, bucket, "single/obj", tree.Options{JournalDir: e.jdir})
		if err != nil {
			t.Fatal(err)
		}
		if (run == 0 && sum.Uploaded != 1) || (run == 1 && sum.Unchanged != 1) {
			t.Errorf("run %d: %+v", run, sum)
		}
	}
	v := versions(t, e.srv.HTTPURL(), bucket, "single/")["single/obj"]
	crc, size := crcOf(t, path)
	if len(v) != 1 || v[0].Size != size || v[0].CRC32C != crc {
		t.Errorf("stored %+v, want one of size %d crc %08x", v, size, crc)
	}
}

func TestBadInput(t *testing.T) {
	e := newEnv(t)
	dir := mkTree(t, map[string]int{"a": 1})
	file := filepath.Join(dir, "a")
	for _, tc := range []struct {
		name, dir, bucket, prefix string
		opts                      tree.Options
		want                      string
	}{
		{"empty bucket", dir, "", "p", tree.Options{}, "empty bucket"},
		{"bucket case", dir, "Bucket", "p", tree.Options{}, "only lowercase"},
		{"bucket short", dir, "ab", "p", tree.Options{}, "3 to 222"},
		{"prefix slash", dir, bucket, "/p", tree.Options{}, "starts with"},
		{"prefix newline", dir, bucket, "a\nb", tree.Options{}, "line feed"},
		{"prefix empty segment", dir, bucket, "a//b", tree.Options{}, "empty segment"},
		{"prefix dotdot", dir, bucket, "a/../b", tree.Options{}, `".." segment`},
		{"prefix invalid UTF-8", dir, bucket, "a\xffb", tree.Options{}, "UTF-8"},
		{"no dir", filepath.Join(dir, "missing"), bucket, "p", tree.Options{}, "no such file"},
		{"dir is a file", file, bucket, "p", tree.Options{}, "not a directory"},
		{"negative concurrency", dir, bucket, "p", tree.Options{Concurrency: -1}, "negative concurrency"},
		{"unknown compare", dir, bucket, "p", tree.Options{Compare: 7}, "unknown Compare"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tree.Upload(context.Background(), e.c, tc.dir, tc.bucket, tc.prefix, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
		})
	}
	if _, err := tree.Upload(context.Background(), nil, dir, bucket, "p", tree.Options{}); err == nil {
		t.Error("nil client: no error")
	}
	if _, err := tree.UploadFile(context.Background(), e.c, dir, bucket, "o", tree.Options{}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("UploadFile of a directory: %v", err)
	}
	if _, err := tree.UploadFile(context.Background(), e.c, file, bucket, "", tree.Options{}); err == nil {
		t.Error("UploadFile with an empty object name: no error")
	}
	if w := writes(e.srv); w != 0 {
		t.Errorf("bad input made %d write calls", w)
	}
}

func TestLocked(t *testing.T) {
	e := newEnv(t)
	dir := mkTree(t, map[string]int{"a": 1})
	started := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error)
	go func() {
		var once bool
		_, err := tree.Upload(context.Background(), e.c, dir, bucket, "l", tree.Options{JournalDir: e.jdir, OnEvent: func(ev tree.Event) {
			if ev.Kind == tree.Walked && !once {
				once = true
				close(started)
				<-release
			}
		}})
		done <- err
	}()
	<-started
	_, err := tree.Upload(context.Background(), e.c, dir, bucket, "l", tree.Options{JournalDir: e.jdir})
	close(release)
	if err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("a second upload to the same destination at once: %v, want an error", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestUnreadableJournalEntry(t *testing.T) {
	// An entry the journal cannot read (another object's, of another
	// format) fails no file of the tree.
	e := newEnv(t)
	if err := os.WriteFile(filepath.Join(e.jdir, "0123456789abcdef0123456789abcdef.objup.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := mkTree(t, map[string]int{"a": 10, "b": 300 << 10})
	sum, err := tree.Upload(context.Background(), e.c, dir, bucket, "u", tree.Options{JournalDir: e.jdir})
	if err != nil || !sum.OK() || sum.Uploaded != 2 {
		t.Fatalf("%+v, %v", sum, err)
	}
	checkOneGeneration(t, e.srv, dir, "u", []string{"a", "b"})
}

func TestWriterOptions(t *testing.T) {
	e := newEnv(t)
	dir := mkTree(t, map[string]int{"a.txt": 10, "big.bin": 400 << 10})
	opts := tree.Options{JournalDir: e.jdir, WriterOptions: []uploader.WriterOption{
		uploader.WithAttrs(uploader.ObjectAttrs{ContentType: "text/plain", Metadata: map[string]string{"k": "v"}}),
	}}
	if _, err := tree.Upload(context.Background(), e.c, dir, bucket, "w", opts); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"w/a.txt", "w/big.bin"} {
		o, err := e.srv.Object(bucket, name)
		if err != nil || o.ContentType != "text/plain" || o.Metadata["k"] != "v" {
			t.Errorf("%s: content type %q, metadata %v, %v", name, o.ContentType, o.Metadata, err)
		}
	}
}
