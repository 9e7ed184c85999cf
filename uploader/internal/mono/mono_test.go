package mono

import (
	"testing"
	"time"
)

func TestTime(t *testing.T) {
	a := Now()
	if a == 0 {
		t.Fatal("Now returned 0")
	}
	b := a.Add(time.Second)
	if got := b.Since(a); got != time.Second {
		t.Fatalf("Since = %v, want 1s", got)
	}
	if got := b.Wall().Sub(a.Wall()); got != time.Second {
		t.Fatalf("Wall difference = %v, want 1s", got)
	}
	if d := time.Since(Now().Wall()); d < 0 || d > time.Minute {
		t.Fatalf("Now().Wall() is %v from time.Now", d)
	}
}
