package fakes

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// naiveList lists b by scanning every stored generation: the reference the
// indexed listing must agree with, page after page.
func naiveList(b *bucket, q *listQuery) (entries []string) {
	var all []entry
	b.index.Ascend(func(e entry) bool { all = append(all, e); return true })
	seen := map[string]bool{}
	for _, e := range all {
		o := e.obj
		switch {
		case !q.versions && !o.live(),
			!strings.HasPrefix(o.name, q.prefix),
			q.startOffset != "" && o.name < q.startOffset,
			q.endOffset != "" && o.name >= q.endOffset:
			continue
		}
		if q.delimiter != "" {
			if i := strings.Index(o.name[len(q.prefix):], q.delimiter); i >= 0 {
				p := o.name[:len(q.prefix)+i+len(q.delimiter)]
				if !seen[p] {
					seen[p] = true
					entries = append(entries, "prefix "+p)
				}
				if q.includeTrailingDelimiter && o.name == p {
					entries = append(entries, fmt.Sprintf("%s#%d", o.name, o.generation))
				}
				continue
			}
		}
		entries = append(entries, fmt.Sprintf("%s#%d", o.name, o.generation))
	}
	return entries
}

// pagedList lists b page by page and returns every entry, checking that no
// page holds more than the page size of objects and prefixes.
func pagedList(t *testing.T, b *bucket, q listQuery) []string {
	t.Helper()
	var out []string
	for range 10_000 {
		page, err := b.list(&q)
		if err != nil {
			t.Fatal(err)
		}
		// Objects and prefixes come out in name order; merge them as
		// the naive listing orders them.
		var entries []string
		oi := 0
		for _, p := range page.prefixes {
			for oi < len(page.objects) && page.objects[oi].name < p {
				entries = append(entries, fmt.Sprintf("%s#%d", page.objects[oi].name, page.objects[oi].generation))
				oi++
			}
			entries = append(entries, "prefix "+p)
			for oi < len(page.objects) && page.objects[oi].name == p {
				entries = append(entries, fmt.Sprintf("%s#%d", page.objects[oi].name, page.objects[oi].generation))
				oi++
			}
		}
		for ; oi < len(page.objects); oi++ {
			entries = append(entries, fmt.Sprintf("%s#%d", page.objects[oi].name, page.objects[oi].generation))
		}
		counted := len(page.prefixes)
		for _, o := range page.objects {
			if !q.includeTrailingDelimiter || !slices.Contains(page.prefixes, o.name) {
				counted++
			}
		}
		if counted > q.pageSize {
			t.Fatalf("page of %d entries, page size %d", counted, q.pageSize)
		}
		out = append(out, entries...)
		if page.next == "" {
			return out
		}
		if counted < q.pageSize {
			t.Fatalf("a page of %d entries (size %d) before the last", counted, q.pageSize)
		}
		q.token = page.next
	}
	t.Fatal("the listing does not end")
	return nil
}

// TestListAgainstScan compares the indexed listing with a scan of every
// object, for random trees and random queries.
func TestListAgainstScan(t *testing.T) {
	s := newStore()
	rng := rand.New(rand.NewPCG(7, 9))
	name := func() string {
		var sb strings.Builder
		for range 1 + rng.IntN(6) {
			sb.WriteByte("ab/c\xff"[rng.IntN(5)])
		}
		return sb.String()
	}
	for _, versioned := range []bool{false, true} {
		b, err := s.createBucket(fmt.Sprintf("list-%v", versioned), versioned, false)
		if err != nil {
			t.Fatal(err)
		}
		for range 400 {
			n := name()
			switch rng.IntN(5) {
			case 0:
				b.remove(n, 0, nil) // often not found: fine
			default:
				if _, err := b.put(&object{name: n}, nil, ""); err != nil {
					t.Fatal(err)
				}
			}
		}
		for i := range 300 {
			q := listQuery{pageSize: 1 + rng.IntN(7), versions: rng.IntN(2) == 0}
			if rng.IntN(2) == 0 {
				p := name()
				q.prefix = p[:min(len(p), 1+rng.IntN(2))]
			}
			if rng.IntN(2) == 0 {
				q.delimiter = []string{"/", "b", "/c"}[rng.IntN(3)]
				q.includeTrailingDelimiter = rng.IntN(2) == 0
			}
			if rng.IntN(3) == 0 {
				q.startOffset = name()
			}
			if rng.IntN(3) == 0 {
				q.endOffset = name()
			}
			want := naiveList(b, &q)
			got := pagedList(t, b, q)
			if !slices.Equal(got, want) {
				t.Fatalf("versioned=%v query %d %+v:\n got %q\nwant %q", versioned, i, q, got, want)
			}
		}
	}
}

func TestConditions(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	live := &object{generation: 5, metageneration: 2}
	for _, tc := range []struct {
		name string
		c    *conditions
		o    *object
		want int // HTTP status of the failure, 0 if it holds
	}{
		{"none", nil, live, 0},
		{"none, no object", nil, nil, 0},
		{"generation match", &conditions{genMatch: i64(5)}, live, 0},
		{"generation mismatch", &conditions{genMatch: i64(4)}, live, 412},
		{"does not exist", &conditions{genMatch: i64(0)}, nil, 0},
		{"does not exist, but does", &conditions{genMatch: i64(0)}, live, 412},
		{"generation match, no object", &conditions{genMatch: i64(5)}, nil, 412},
		{"generation not match", &conditions{genNotMatch: i64(4)}, live, 0},
		{"generation not match fails", &conditions{genNotMatch: i64(5)}, live, 304},
		{"generation not match, no object", &conditions{genNotMatch: i64(4)}, nil, 304},
		{"metageneration match", &conditions{metaMatch: i64(2)}, live, 0},
		{"metageneration mismatch", &conditions{metaMatch: i64(1)}, live, 412},
		{"metageneration match, no object", &conditions{metaMatch: i64(1)}, nil, 412},
		{"metageneration not match", &conditions{metaNotMatch: i64(1)}, live, 0},
		{"metageneration not match fails", &conditions{metaNotMatch: i64(2)}, live, 304},
		{"all hold", &conditions{genMatch: i64(5), genNotMatch: i64(1), metaMatch: i64(2), metaNotMatch: i64(1)}, live, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.check(tc.o)
			got := 0
			if err != nil {
				got, _ = httpKindOf(err)
				if status.Code(err) != codes.FailedPrecondition {
					t.Fatalf("gRPC code %v", status.Code(err))
				}
			}
			if got != tc.want {
				t.Fatalf("check = %v (%d), want %d", err, got, tc.want)
			}
		})
	}
}

// TestStoreConcurrent runs writes, reads, listings, metadata updates and
// deletes at once on one bucket, for the race detector, then checks that
// every live object has the content its generation was written with.
func TestStoreConcurrent(t *testing.T) {
	s := newStore()
	b, _ := s.createBucket("conc", true, false)
	const workers, ops = 8, 300
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 3))
			for range ops {
				n := fmt.Sprintf("o/%d", rng.IntN(20))
				switch rng.IntN(6) {
				case 0, 1:
					c := []byte(n)
					b.put(&object{name: n, size: int64(len(c)), content: [][]byte{c}}, nil, fmt.Sprint("t", w))
				case 2:
					if o, err := b.get(n, 0); err == nil && string(o.bytes()) != n {
						t.Errorf("%s holds %q", n, o.bytes())
					}
				case 3:
					b.list(&listQuery{prefix: "o/", delimiter: "/", versions: rng.IntN(2) == 0, pageSize: 5})
				case 4:
					b.update(n, 0, nil, func(o *object) error { o.contentType = "x"; return nil })
				case 5:
					b.remove(n, 0, nil)
				}
			}
		}()
	}
	wg.Wait()
	var objects, bytes int64
	b.index.Ascend(func(e entry) bool {
		objects++
		bytes += e.obj.size
		if string(e.obj.bytes()) != e.name {
			t.Errorf("%s#%d holds %q", e.name, e.gen, e.obj.bytes())
		}
		return true
	})
	var uo, ub int64
	for _, u := range s.usageByTenant() {
		uo += u.Objects
		ub += u.Bytes
	}
	if uo != objects || ub != bytes {
		t.Fatalf("usage %d objects, %d bytes; the index holds %d, %d", uo, ub, objects, bytes)
	}
}
