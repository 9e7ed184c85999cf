package capacity

import (
	"fmt"
	"testing"
	"time"
)

// TestNamesBounded writes a new name every millisecond for a minute: a
// bucket keeps only the names of the last two periods (2 s by default).
func TestNamesBounded(t *testing.T) {
	now := time.Unix(0, 0)
	l, err := New(WithAllBuckets(Config{Rate: 2000}), WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	most := 0
	for i := range 60_000 {
		now = now.Add(time.Millisecond)
		if v := l.Admit("b", fmt.Sprint(i), ""); v != Admitted {
			t.Fatalf("write %d: %v", i, v)
		}
		st := (*l.buckets.Load())["b"]
		most = max(most, len(st.names)+len(st.old))
	}
	if most > 4001 {
		t.Errorf("%d names kept at most, want at most 2 periods' worth (4,000)", most)
	}
	// A name forgotten had a full token bucket: it still gets its burst.
	now = now.Add(10 * time.Second)
	l.Admit("b", "again", "")
	now = now.Add(5 * time.Second) // two rotations: "again" is forgotten
	l.Admit("b", "other", "")
	l.Admit("b", "other2", "")
	for i, want := range []Verdict{Admitted, Admitted, ObjectRateLimited} {
		if got := l.Admit("b", "again", ""); got != want {
			t.Errorf("write %d of a forgotten name: %v, want %v", i+1, got, want)
		}
	}
}

// BenchmarkAdmit measures a decision, from goroutines in parallel, each
// write to a new name (the dearest case: a map store per write).
func BenchmarkAdmit(b *testing.B) {
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"bucket", Config{Rate: 1e12, ObjectRate: -1}},
		{"bucket+names", Config{Rate: 1e12}},
	} {
		b.Run(c.name, func(b *testing.B) {
			l, err := New(WithAllBuckets(c.cfg))
			if err != nil {
				b.Fatal(err)
			}
			names := make([]string, 1<<16)
			for i := range names {
				names[i] = fmt.Sprint("o/", i)
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					l.Admit("b", names[i&(len(names)-1)], "tenant")
					i++
				}
			})
		})
	}
}
