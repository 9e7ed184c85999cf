package store

import (
	"errors"
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
func naiveList(b *Bucket, q *ListQuery) (entries []string) {
	var all []*Object
	b.ascend("", 0, func(o *Object) bool { all = append(all, o); return true })
	seen := map[string]bool{}
	for _, o := range all {
		switch {
		case !q.Versions && !o.Live(),
			!strings.HasPrefix(o.name, q.Prefix),
			q.StartOffset != "" && o.name < q.StartOffset,
			q.EndOffset != "" && o.name >= q.EndOffset:
			continue
		}
		if q.Delimiter != "" {
			if i := strings.Index(o.name[len(q.Prefix):], q.Delimiter); i >= 0 {
				p := o.name[:len(q.Prefix)+i+len(q.Delimiter)]
				if !seen[p] {
					seen[p] = true
					entries = append(entries, "prefix "+p)
				}
				if q.IncludeTrailingDelimiter && o.name == p {
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
func pagedList(t *testing.T, b *Bucket, q ListQuery) []string {
	t.Helper()
	var out []string
	for range 10_000 {
		page, err := b.List(&q)
		if err != nil {
			t.Fatal(err)
		}
		// Objects and prefixes come out in name order; merge them as
		// the naive listing orders them.
		var entries []string
		oi := 0
		for _, p := range page.Prefixes {
			for oi < len(page.Objects) && page.Objects[oi].name < p {
				entries = append(entries, fmt.Sprintf("%s#%d", page.Objects[oi].name, page.Objects[oi].generation))
				oi++
			}
			entries = append(entries, "prefix "+p)
			for oi < len(page.Objects) && page.Objects[oi].name == p {
				entries = append(entries, fmt.Sprintf("%s#%d", page.Objects[oi].name, page.Objects[oi].generation))
				oi++
			}
		}
		for ; oi < len(page.Objects); oi++ {
			entries = append(entries, fmt.Sprintf("%s#%d", page.Objects[oi].name, page.Objects[oi].generation))
		}
		counted := len(page.Prefixes)
		for _, o := range page.Objects {
			if !q.IncludeTrailingDelimiter || !slices.Contains(page.Prefixes, o.name) {
				counted++
			}
		}
		if counted > q.PageSize {
			t.Fatalf("page of %d entries, page size %d", counted, q.PageSize)
		}
		out = append(out, entries...)
		if page.Next == "" {
			return out
		}
		if counted < q.PageSize {
			t.Fatalf("a page of %d entries (size %d) before the last", counted, q.PageSize)
		}
		q.Token = page.Next
	}
	t.Fatal("the listing does not end")
	return nil
}

// TestListAgainstScan compares the indexed listing with a scan of every
// object, for random trees and random queries.
func TestListAgainstScan(t *testing.T) {
	forEachStore(t, testListAgainstScan)
}

// forEachStore runs test on a store in memory and on a store on disk.
func forEachStore(t *testing.T, test func(*testing.T, *Store)) {
	for _, kind := range []string{"memory", "disk"} {
		t.Run(kind, func(t *testing.T) {
			s := New()
			if kind == "disk" {
				var err error
				if s, err = Open(t.TempDir()); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
			}
			test(t, s)
		})
	}
}

func testListAgainstScan(t *testing.T, s *Store) {
	rng := rand.New(rand.NewPCG(7, 9))
	name := func() string {
		var sb strings.Builder
		for range 1 + rng.IntN(6) {
			sb.WriteByte("ab/c\xff"[rng.IntN(5)])
		}
		return sb.String()
	}
	for _, versioned := range []bool{false, true} {
		b, err := s.CreateBucket(fmt.Sprintf("list-%v", versioned), versioned, false)
		if err != nil {
			t.Fatal(err)
		}
		for range 400 {
			n := name()
			switch rng.IntN(5) {
			case 0:
				b.Remove(n, 0, nil) // often not found: fine
			default:
				if _, err := b.Put(n, Attrs{}, Content{}, nil, ""); err != nil {
					t.Fatal(err)
				}
			}
		}
		for i := range 300 {
			q := ListQuery{PageSize: 1 + rng.IntN(7), Versions: rng.IntN(2) == 0}
			if rng.IntN(2) == 0 {
				p := name()
				q.Prefix = p[:min(len(p), 1+rng.IntN(2))]
			}
			if rng.IntN(2) == 0 {
				q.Delimiter = []string{"/", "b", "/c"}[rng.IntN(3)]
				q.IncludeTrailingDelimiter = rng.IntN(2) == 0
			}
			if rng.IntN(3) == 0 {
				q.StartOffset = name()
			}
			if rng.IntN(3) == 0 {
				q.EndOffset = name()
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
	live := &Object{generation: 5, metageneration: 2}
	for _, tc := range []struct {
		name string
		c    *Conditions
		o    *Object
		want int // HTTP status of the failure, 0 if it holds
	}{
		{"none", nil, live, 0},
		{"none, no object", nil, nil, 0},
		{"generation match", &Conditions{GenMatch: i64(5)}, live, 0},
		{"generation mismatch", &Conditions{GenMatch: i64(4)}, live, 412},
		{"does not exist", &Conditions{GenMatch: i64(0)}, nil, 0},
		{"does not exist, but does", &Conditions{GenMatch: i64(0)}, live, 412},
		{"generation match, no object", &Conditions{GenMatch: i64(5)}, nil, 412},
		{"generation not match", &Conditions{GenNotMatch: i64(4)}, live, 0},
		{"generation not match fails", &Conditions{GenNotMatch: i64(5)}, live, 304},
		{"generation not match, no object", &Conditions{GenNotMatch: i64(4)}, nil, 304},
		{"metageneration match", &Conditions{MetaMatch: i64(2)}, live, 0},
		{"metageneration mismatch", &Conditions{MetaMatch: i64(1)}, live, 412},
		{"metageneration match, no object", &Conditions{MetaMatch: i64(1)}, nil, 412},
		{"metageneration not match", &Conditions{MetaNotMatch: i64(1)}, live, 0},
		{"metageneration not match fails", &Conditions{MetaNotMatch: i64(2)}, live, 304},
		{"all hold", &Conditions{GenMatch: i64(5), GenNotMatch: i64(1), MetaMatch: i64(2), MetaNotMatch: i64(1)}, live, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Check(tc.o)
			got := 0
			if err != nil {
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("%v is not the store's error", err)
				}
				got = e.HTTP
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
	forEachStore(t, testStoreConcurrent)
}

func testStoreConcurrent(t *testing.T, s *Store) {
	b, _ := s.CreateBucket("conc", true, false)
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
					b.Put(n, Attrs{}, Content{Parts: [][]byte{c}, Size: int64(len(c))}, nil, fmt.Sprint("t", w))
				case 2:
					if o, err := b.Get(n, 0); err == nil && string(o.Bytes()) != n {
						t.Errorf("%s holds %q", n, o.Bytes())
					}
				case 3:
					b.List(&ListQuery{Prefix: "o/", Delimiter: "/", Versions: rng.IntN(2) == 0, PageSize: 5})
				case 4:
					b.Update(n, 0, nil, func(a *Attrs) error { a.ContentType = "x"; return nil })
				case 5:
					b.Remove(n, 0, nil)
				}
			}
		}()
	}
	wg.Wait()
	var objects, bytes int64
	b.ascend("", 0, func(o *Object) bool {
		objects++
		bytes += o.size
		if string(o.Bytes()) != o.name {
			t.Errorf("%s#%d holds %q", o.name, o.generation, o.Bytes())
		}
		return true
	})
	var uo, ub int64
	for _, u := range s.UsageByTenant() {
		uo += u.Objects
		ub += u.Bytes
	}
	if uo != objects || ub != bytes {
		t.Fatalf("usage %d objects, %d bytes; the index holds %d, %d", uo, ub, objects, bytes)
	}
}
