package fakes_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"github.com/objup/objup/fakes"
)

// The differential test runs one sequence of operations with the official
// Go client over the JSON API against fake-gcs-server, the independent
// reference, and against our fake, and compares what comes back, leaving out
// what must differ between any two servers (times, ETags, IDs, links) and
// naming generations by their order of appearance.
//
// Where the two differ, our fake follows GCS's documented behaviour; each
// known difference is listed in knownDifferences, with the reason, and in
// docs/fake/json.md. The test fails on a difference not listed, and
// on a listed one that no longer occurs.

// knownDifferences are the steps whose results differ between
// fake-gcs-server and our fake, each with why ours is right.
var knownDifferences = map[string]string{
	"GenerationNotMatch on a write":                     "a failed ifGenerationNotMatch is 304 Not Modified, as GCS documents; fake-gcs-server answers 412",
	"read with GenerationMatch":                         "fake-gcs-server ignores x-goog-if-generation-match on path-style reads; GCS answers 412",
	"stat with GenerationNotMatch":                      "fake-gcs-server ignores ifGenerationNotMatch on objects.get; GCS answers 304",
	"stat with MetagenerationMatch":                     "fake-gcs-server ignores ifMetagenerationMatch on objects.get; GCS answers 412",
	"update metadata":                                   "fake-gcs-server leaves metageneration out of the patched resource (the client reads 0); a metadata update bumps it",
	"update metadata again":                             "as above: metageneration 3 after two updates",
	"update with a stale MetagenerationMatch":           "fake-gcs-server ignores the precondition of objects.patch and applies it; GCS answers 412",
	"clear metadata":                                    "fake-gcs-server keeps the metadata when the client clears it (\"metadata\": null), and shows the patch it applied despite a failed precondition",
	"read after updates":                                "follows from the ignored precondition: fake-gcs-server applied the stale update",
	"list pages of 2 with prefixes":                     "maxResults bounds items and prefixes together, as GCS documents; fake-gcs-server counts only items and repeats every later prefix on each page",
	"list pages of 1 with prefixes":                     "as above",
	"delete with a stale GenerationMatch":               "fake-gcs-server ignores the precondition of objects.delete and deletes; GCS answers 412",
	"delete a bucket that is not empty":                 "GCS answers 409 Conflict; fake-gcs-server 412",
	"compose with a missing source":                     "GCS answers 404 for a missing source; fake-gcs-server 500",
	"compose onto an existing object with DoesNotExist": "fake-gcs-server ignores the destination's ifGenerationMatch on objects.compose; GCS answers 412",
}

// transcript records the outcome of each step of a scenario.
type transcript struct {
	steps []string
	lines map[string]string
	gens  map[int64]string // generation -> "g1", "g2", ... in order of appearance
}

func newTranscript() *transcript {
	return &transcript{lines: map[string]string{}, gens: map[int64]string{}}
}

// add records the result of step; step names must be unique.
func (tr *transcript) add(step, format string, args ...any) {
	if _, dup := tr.lines[step]; dup {
		panic("duplicate step " + step)
	}
	tr.steps = append(tr.steps, step)
	tr.lines[step] = fmt.Sprintf(format, args...)
}

// gen names a generation by its order of appearance.
func (tr *transcript) gen(g int64) string {
	if g == 0 {
		return "0"
	}
	if n, ok := tr.gens[g]; ok {
		return n
	}
	n := fmt.Sprintf("g%d", len(tr.gens)+1)
	tr.gens[g] = n
	return n
}

// attrs is the comparable part of an object's attributes.
func (tr *transcript) attrs(a *storage.ObjectAttrs) string {
	if a == nil {
		return "<nil>"
	}
	if a.Prefix != "" {
		return "prefix " + a.Prefix
	}
	meta := slices.Sorted(maps.Keys(a.Metadata))
	var kv []string
	for _, k := range meta {
		kv = append(kv, k+"="+a.Metadata[k])
	}
	ct := ""
	if !a.CustomTime.IsZero() {
		ct = a.CustomTime.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("%s/%s gen=%s meta=%d size=%d crc=%08x md5=%x type=%q cache=%q disp=%q lang=%q enc=%q class=%q custom=%q deleted=%v metadata=%v",
		a.Bucket, a.Name, tr.gen(a.Generation), a.Metageneration, a.Size, a.CRC32C, a.MD5, a.ContentType, a.CacheControl,
		a.ContentDisposition, a.ContentLanguage, a.ContentEncoding, a.StorageClass, ct, !a.Deleted.IsZero(), kv)
}

// errText is the comparable part of an error: the client's sentinel, or the
// HTTP status.
func errText(err error) string {
	var ge *googleapi.Error
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, storage.ErrObjectNotExist):
		return "ErrObjectNotExist"
	case errors.Is(err, storage.ErrBucketNotExist):
		return "ErrBucketNotExist"
	case errors.As(err, &ge):
		return fmt.Sprintf("HTTP %d", ge.Code)
	}
	return "error: " + err.Error()
}

// diffStep is one operation of the scenario.
type diffStep struct {
	name string
	run  func(ctx context.Context, c *storage.Client, tr *transcript, step string)
}

// Buckets of the scenario.
const (
	diffBucket    = "diff-plain"
	diffVersioned = "diff-versioned"
)

// diffSizes are the upload sizes of the scenario, 0 to 20 MiB.
var diffSizes = []int{0, 1, 1 << 10, 256<<10 + 1, 5 << 20, 20 << 20}

// diffData returns the content of the scenario's object of size n.
func diffData(n int) []byte { return payload(n, byte(n%251)) }

// upload writes data as bkt/name with chunkSize (-1: the client's default)
// and attrs, and records the writer's attributes.
func upload(ctx context.Context, c *storage.Client, tr *transcript, step, bkt, name string, data []byte, chunkSize int, conds *storage.Conditions, edit func(*storage.Writer)) int64 {
	o := c.Bucket(bkt).Object(name)
	if conds != nil {
		o = o.If(*conds)
	}
	w := o.NewWriter(ctx)
	if chunkSize >= 0 {
		w.ChunkSize = chunkSize
	}
	if edit != nil {
		edit(w)
	}
	_, err := w.Write(data)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		tr.add(step, "%s", errText(err))
		return 0
	}
	tr.add(step, "%s", tr.attrs(w.Attrs()))
	return w.Attrs().Generation
}

// read reads bkt/name (generation gen if not 0) in the range [off, off+n)
// as NewRangeReader takes it, and records whether the bytes are want's,
// with the reader's attributes.
func read(ctx context.Context, c *storage.Client, tr *transcript, step, bkt, name string, gen, off, n int64, want []byte) {
	o := c.Bucket(bkt).Object(name)
	if gen != 0 {
		o = o.Generation(gen)
	}
	r, err := o.NewRangeReader(ctx, off, n)
	if err != nil {
		tr.add(step, "%s", errText(err))
		return
	}
	got, err := io.ReadAll(r)
	r.Close()
	a := r.Attrs
	verdict := "content ok"
	if !bytes.Equal(got, want) {
		verdict = fmt.Sprintf("content differs: %d bytes, want %d", len(got), len(want))
	}
	tr.add(step, "%s, read %s; size=%d start=%d type=%q gen=%s", verdict, errText(err), a.Size, a.StartOffset, a.ContentType, tr.gen(a.Generation))
}

// stat records an object's attributes.
func stat(ctx context.Context, o *storage.ObjectHandle, tr *transcript, step string) {
	a, err := o.Attrs(ctx)
	if err != nil {
		tr.add(step, "%s", errText(err))
		return
	}
	tr.add(step, "%s", tr.attrs(a))
}

// listPages records a listing page by page.
func listPages(ctx context.Context, c *storage.Client, tr *transcript, step, bkt string, q *storage.Query, pageSize int) {
	it := c.Bucket(bkt).Objects(ctx, q)
	p := iterator.NewPager(it, pageSize, "")
	var pages []string
	for range 100 {
		var page []*storage.ObjectAttrs
		next, err := p.NextPage(&page)
		if err != nil {
			tr.add(step, "%v then %s", pages, errText(err))
			return
		}
		var entries []string
		for _, a := range page {
			entries = append(entries, tr.attrs(a))
		}
		pages = append(pages, "["+strings.Join(entries, "; ")+"]")
		if next == "" {
			tr.add(step, "%d pages: %s", len(pages), strings.Join(pages, " "))
			return
		}
	}
	tr.add(step, "more than 100 pages")
}

// scenario is the sequence of operations both servers go through.
func scenario() []diffStep {
	var steps []diffStep
	add := func(name string, run func(ctx context.Context, c *storage.Client, tr *transcript, step string)) {
		steps = append(steps, diffStep{name, run})
	}
	add("create bucket", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		tr.add(step, "%s", errText(c.Bucket(diffBucket).Create(ctx, "proj", nil)))
	})
	add("create bucket again", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		tr.add(step, "%s", errText(c.Bucket(diffBucket).Create(ctx, "proj", nil)))
	})
	add("create versioned bucket", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		tr.add(step, "%s", errText(c.Bucket(diffVersioned).Create(ctx, "proj", &storage.BucketAttrs{VersioningEnabled: true})))
	})
	add("bucket attrs", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		a, err := c.Bucket(diffVersioned).Attrs(ctx)
		if err != nil {
			tr.add(step, "%s", errText(err))
			return
		}
		tr.add(step, "name=%s versioning=%v", a.Name, a.VersioningEnabled)
	})
	add("missing bucket attrs", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		_, err := c.Bucket("diff-missing").Attrs(ctx)
		tr.add(step, "%s", errText(err))
	})

	// Uploads of every size, in the client's modes: one multipart request
	// (ChunkSize 0), its default (16 MiB chunks: resumable above that) and
	// 256 KiB chunks (resumable above 256 KiB).
	for _, n := range diffSizes {
		for _, cs := range []int{0, -1, 256 << 10} {
			if cs == 256<<10 && n > 5<<20 {
				continue
			}
			name := fmt.Sprintf("up/%d/chunk%d", n, cs)
			add("upload "+name, func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
				upload(ctx, c, tr, step, diffBucket, name, diffData(n), cs, nil, func(w *storage.Writer) {
					w.ContentType = "application/x-diff"
					w.CacheControl = "no-store"
					w.ContentDisposition = "attachment"
					w.ContentLanguage = "en"
					w.Metadata = map[string]string{"size": fmt.Sprint(n)}
					w.CustomTime = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
				})
			})
			add("read "+name, func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
				read(ctx, c, tr, step, diffBucket, name, 0, 0, -1, diffData(n))
			})
			add("stat "+name, func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
				stat(ctx, c.Bucket(diffBucket).Object(name), tr, step)
			})
		}
	}

	// Range reads.
	big := diffData(5 << 20)
	bigName := fmt.Sprintf("up/%d/chunk-1", 5<<20)
	for _, r := range []struct{ off, n int64 }{{0, 1}, {10, 100}, {3<<20 - 1, 2<<20 + 1}, {5<<20 - 5, -1}, {5<<20 - 5, 100}, {-7, -1}, {5 << 20, -1}, {5<<20 + 10, -1}, {0, 0}} {
		add(fmt.Sprintf("range %d+%d", r.off, r.n), func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
			start := r.off
			if start < 0 {
				start += int64(len(big))
			}
			end := int64(len(big))
			if r.n >= 0 {
				end = min(start+r.n, end)
			}
			want := big[min(start, end):end]
			read(ctx, c, tr, step, diffBucket, bigName, 0, r.off, r.n, want)
		})
	}

	// Overwrites and preconditions.
	var gen1, gen2 int64
	doesNotExist := &storage.Conditions{DoesNotExist: true}
	add("create with DoesNotExist", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		gen1 = upload(ctx, c, tr, step, diffBucket, "pre", []byte("one"), -1, doesNotExist, nil)
	})
	add("DoesNotExist on an existing object", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		upload(ctx, c, tr, step, diffBucket, "pre", []byte("nope"), -1, doesNotExist, nil)
	})
	add("overwrite with GenerationMatch", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		gen2 = upload(ctx, c, tr, step, diffBucket, "pre", []byte("two"), -1, &storage.Conditions{GenerationMatch: gen1}, nil)
	})
	add("stale GenerationMatch", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		upload(ctx, c, tr, step, diffBucket, "pre", []byte("three"), 0, &storage.Conditions{GenerationMatch: gen1}, nil)
	})
	add("stale GenerationMatch, resumable", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		upload(ctx, c, tr, step, diffBucket, "pre", diffData(1<<20), 256<<10, &storage.Conditions{GenerationMatch: gen1}, nil)
	})
	add("GenerationNotMatch on a write", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		upload(ctx, c, tr, step, diffBucket, "pre", []byte("four"), 0, &storage.Conditions{GenerationNotMatch: gen2}, nil)
	})
	add("read after preconditions", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		read(ctx, c, tr, step, diffBucket, "pre", 0, 0, -1, []byte("two"))
	})
	add("read with GenerationMatch", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		r, err := c.Bucket(diffBucket).Object("pre").If(storage.Conditions{GenerationMatch: gen1}).NewReader(ctx)
		if err == nil {
			r.Close()
		}
		tr.add(step, "%s", errText(err))
	})
	add("stat with GenerationNotMatch", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		stat(ctx, c.Bucket(diffBucket).Object("pre").If(storage.Conditions{GenerationNotMatch: gen2}), tr, step)
	})
	add("stat with MetagenerationMatch", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		stat(ctx, c.Bucket(diffBucket).Object("pre").If(storage.Conditions{GenerationMatch: gen2, MetagenerationMatch: 2}), tr, step)
	})

	// Metadata updates.
	add("update metadata", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		a, err := c.Bucket(diffBucket).Object("pre").If(storage.Conditions{MetagenerationMatch: 1}).Update(ctx, storage.ObjectAttrsToUpdate{
			ContentType: "text/plain", CacheControl: "public", Metadata: map[string]string{"k": "v", "x": "y"},
		})
		if err != nil {
			tr.add(step, "%s", errText(err))
			return
		}
		tr.add(step, "%s", tr.attrs(a))
	})
	add("update metadata again", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		a, err := c.Bucket(diffBucket).Object("pre").Update(ctx, storage.ObjectAttrsToUpdate{Metadata: map[string]string{"k": "w"}, ContentLanguage: "fr"})
		if err != nil {
			tr.add(step, "%s", errText(err))
			return
		}
		tr.add(step, "%s", tr.attrs(a))
	})
	add("update with a stale MetagenerationMatch", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		_, err := c.Bucket(diffBucket).Object("pre").If(storage.Conditions{MetagenerationMatch: 1}).Update(ctx, storage.ObjectAttrsToUpdate{ContentType: "x/y"})
		tr.add(step, "%s", errText(err))
	})
	add("clear metadata", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		a, err := c.Bucket(diffBucket).Object("pre").Update(ctx, storage.ObjectAttrsToUpdate{Metadata: map[string]string{}})
		if err != nil {
			tr.add(step, "%s", errText(err))
			return
		}
		tr.add(step, "%s", tr.attrs(a))
	})
	add("update a missing object", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		_, err := c.Bucket(diffBucket).Object("missing").Update(ctx, storage.ObjectAttrsToUpdate{ContentType: "x/y"})
		tr.add(step, "%s", errText(err))
	})
	add("read after updates", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		read(ctx, c, tr, step, diffBucket, "pre", 0, 0, -1, []byte("two"))
	})

	// Listings: a tree of small objects, listed with prefixes,
	// delimiters, offsets and pages.
	tree := []string{"t/a", "t/b/", "t/b/1", "t/b/2", "t/b/c/3", "t/c", "t/d/4", "t/d/5", "t/e", "t/f/g/h"}
	add("write the tree", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		for _, n := range tree {
			w := c.Bucket(diffBucket).Object(n).NewWriter(ctx)
			w.ChunkSize = 0
			w.Write([]byte(n))
			if err := w.Close(); err != nil {
				tr.add(step, "%s: %s", n, errText(err))
				return
			}
		}
		tr.add(step, "ok")
	})
	for _, q := range []struct {
		name     string
		q        storage.Query
		pageSize int
	}{
		{"all", storage.Query{Prefix: "t/"}, 0},
		{"delimiter", storage.Query{Prefix: "t/", Delimiter: "/"}, 0},
		{"nested", storage.Query{Prefix: "t/b/", Delimiter: "/"}, 0},
		{"pages of 3", storage.Query{Prefix: "t/"}, 3},
		{"pages of 2 with prefixes", storage.Query{Prefix: "t/", Delimiter: "/"}, 2},
		{"pages of 1 with prefixes", storage.Query{Prefix: "t/", Delimiter: "/"}, 1},
		{"offsets", storage.Query{Prefix: "t/", StartOffset: "t/b/2", EndOffset: "t/d/5"}, 0},
		{"offsets and delimiter", storage.Query{Prefix: "t/", Delimiter: "/", StartOffset: "t/b/2", EndOffset: "t/e"}, 0},
		{"trailing delimiter", storage.Query{Prefix: "t/", Delimiter: "/", IncludeTrailingDelimiter: true}, 0},
		{"no match", storage.Query{Prefix: "zzz"}, 0},
	} {
		add("list "+q.name, func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
			qq := q.q
			listPages(ctx, c, tr, step, diffBucket, &qq, q.pageSize)
		})
	}
	add("list a missing bucket", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		listPages(ctx, c, tr, step, "diff-missing", &storage.Query{}, 0)
	})

	// Versions.
	var v1, v2 int64
	add("versioned: write twice", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		v1 = upload(ctx, c, tr, step+" 1", diffVersioned, "v", []byte("first"), 0, nil, nil)
		v2 = upload(ctx, c, tr, step+" 2", diffVersioned, "v", []byte("second"), 0, nil, nil)
		upload(ctx, c, tr, step+" other", diffVersioned, "w", []byte("w"), 0, nil, nil)
	})
	add("versioned: read the old generation", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		read(ctx, c, tr, step, diffVersioned, "v", v1, 0, -1, []byte("first"))
	})
	add("versioned: stat the old generation", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		stat(ctx, c.Bucket(diffVersioned).Object("v").Generation(v1), tr, step)
	})
	add("versioned: list versions", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		listPages(ctx, c, tr, step, diffVersioned, &storage.Query{Versions: true}, 0)
	})
	add("versioned: delete the live object", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		tr.add(step, "%s", errText(c.Bucket(diffVersioned).Object("v").Delete(ctx)))
	})
	add("versioned: stat after delete", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		stat(ctx, c.Bucket(diffVersioned).Object("v"), tr, step)
	})
	add("versioned: list after delete", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		listPages(ctx, c, tr, step, diffVersioned, &storage.Query{}, 0)
	})
	add("versioned: list versions after delete", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		listPages(ctx, c, tr, step, diffVersioned, &storage.Query{Versions: true}, 2)
	})
	add("versioned: delete a generation", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		tr.add(step, "%s", errText(c.Bucket(diffVersioned).Object("v").Generation(v1).Delete(ctx)))
	})
	add("versioned: read a deleted generation", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		read(ctx, c, tr, step, diffVersioned, "v", v1, 0, -1, nil)
	})
	add("versioned: read a noncurrent generation", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		read(ctx, c, tr, step, diffVersioned, "v", v2, 0, -1, []byte("second"))
	})

	// Deletes and not-found.
	add("compose", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		b := c.Bucket(diffBucket)
		comp := b.Object("composed").ComposerFrom(b.Object("up/1024/chunk0"), b.Object("up/1/chunk0"), b.Object("up/262145/chunk0"))
		comp.ContentType = "application/x-composed"
		a, err := comp.Run(ctx)
		if err != nil {
			tr.add(step, "%s", errText(err))
			return
		}
		data, err := b.Object("composed").NewReader(ctx)
		if err != nil {
			tr.add(step, "%s", errText(err))
			return
		}
		got, err := io.ReadAll(data)
		data.Close()
		want := append(append(diffData(1<<10), diffData(1)...), diffData(256<<10+1)...)
		tr.add(step, "size=%d crc=%08x type=%s bytes-equal=%v %s", a.Size, a.CRC32C, a.ContentType, bytes.Equal(got, want), errText(err))
	})
	add("compose with a missing source", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		b := c.Bucket(diffBucket)
		_, err := b.Object("composed-missing").ComposerFrom(b.Object("up/1/chunk0"), b.Object("no-such-object")).Run(ctx)
		tr.add(step, "%s", errText(err))
	})
	add("compose onto an existing object with DoesNotExist", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		b := c.Bucket(diffBucket)
		_, err := b.Object("composed").If(storage.Conditions{DoesNotExist: true}).ComposerFrom(b.Object("up/1/chunk0")).Run(ctx)
		tr.add(step, "%s", errText(err))
	})
	add("delete", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		tr.add(step, "%s", errText(c.Bucket(diffBucket).Object("pre").Delete(ctx)))
	})
	add("delete again", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		tr.add(step, "%s", errText(c.Bucket(diffBucket).Object("pre").Delete(ctx)))
	})
	add("delete with a stale GenerationMatch", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		tr.add(step, "%s", errText(c.Bucket(diffBucket).Object("t/a").If(storage.Conditions{GenerationMatch: 1}).Delete(ctx)))
	})
	add("stat a deleted object", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		stat(ctx, c.Bucket(diffBucket).Object("pre"), tr, step)
	})
	add("read a deleted object", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		read(ctx, c, tr, step, diffBucket, "pre", 0, 0, -1, nil)
	})
	add("read in a missing bucket", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		read(ctx, c, tr, step, "diff-missing", "x", 0, 0, -1, nil)
	})
	add("write to a missing bucket", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		upload(ctx, c, tr, step, "diff-missing", "x", []byte("x"), 0, nil, nil)
	})
	add("delete a bucket that is not empty", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		tr.add(step, "%s", errText(c.Bucket(diffBucket).Delete(ctx)))
	})
	add("delete an empty bucket", func(ctx context.Context, c *storage.Client, tr *transcript, step string) {
		if err := c.Bucket("diff-empty").Create(ctx, "proj", nil); err != nil {
			tr.add(step, "create: %s", errText(err))
			return
		}
		tr.add(step, "%s", errText(c.Bucket("diff-empty").Delete(ctx)))
	})
	return steps
}

// runScenario runs the scenario with an official JSON API client whose
// endpoint is base+"/storage/v1/".
func runScenario(t *testing.T, base string) *transcript {
	t.Helper()
	ctx := ctxT(t)
	c, err := storage.NewClient(ctx, option.WithEndpoint(base+"/storage/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tr := newTranscript()
	for _, s := range scenario() {
		s.run(ctx, c, tr, s.name)
	}
	return tr
}

// startReference starts fake-gcs-server on loopback and returns its URL.
// It serves through an httptest.Server, whose Close waits for every
// connection's goroutine (http.Server's does not), so the leak check never
// sees net/http's lingering closeWriteAndWait.
func startReference(t *testing.T) string {
	t.Helper()
	var h http.Handler
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// fake-gcs-server matches path-style (XML API) reads on its
		// public host, storage.googleapis.com; the JSON API paths keep
		// the real Host, from which it builds session URIs.
		for _, p := range []string{"/storage/v1/", "/upload/", "/download/", "/batch/"} {
			if strings.HasPrefix(r.URL.Path, p) {
				h.ServeHTTP(w, r)
				return
			}
		}
		r2 := *r
		r2.Host = "storage.googleapis.com"
		h.ServeHTTP(w, &r2)
	}))
	fs, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		NoListener:  true,
		Scheme:      "http",
		ExternalURL: hs.URL,
		Writer:      io.Discard,
	})
	if err != nil {
		hs.Close()
		t.Fatal(err)
	}
	h = fs.HTTPHandler()
	t.Cleanup(func() {
		hs.Close()
		fs.Stop()
	})
	return hs.URL
}

func TestDifferentialJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("uploads 20 MiB objects to two servers")
	}
	ref := runScenario(t, startReference(t))
	srv := fakes.NewTest(t)
	ours := runScenario(t, srv.HTTPURL())

	seen := map[string]bool{}
	for _, step := range ours.steps {
		r, o := ref.lines[step], ours.lines[step]
		if r == o {
			continue
		}
		seen[step] = true
		if why, ok := knownDifferences[step]; ok {
			t.Logf("known difference at %q (%s):\n  fake-gcs-server: %s\n  ours:            %s", step, why, r, o)
			continue
		}
		t.Errorf("difference at %q:\n  fake-gcs-server: %s\n  ours:            %s", step, r, o)
	}
	for step := range knownDifferences {
		if !seen[step] {
			t.Errorf("known difference %q no longer occurs: remove it from knownDifferences and docs/fake/json.md", step)
		}
	}
	if !slices.Equal(ref.steps, ours.steps) {
		t.Errorf("the servers went through different steps:\n%q\n%q", ref.steps, ours.steps)
	}
}
