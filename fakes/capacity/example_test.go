package capacity_test

import (
	"fmt"
	"time"

	"github.com/objup/objup/fakes/capacity"
)

// A bucket of 2 writes a second that grows, once saturated for a minute,
// to 4; the clock is moved by hand.
func Example() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l, err := capacity.New(
		capacity.WithAllBuckets(capacity.Config{Rate: 2, AutoscaleAfter: time.Minute}),
		capacity.WithClock(func() time.Time { return now }))
	if err != nil {
		panic(err)
	}
	for _, obj := range []string{"a", "b", "c"} {
		fmt.Println(obj, l.Admit("logs", obj, "team-a"))
	}
	fmt.Println("a", l.Admit("logs", "a", "team-a"), "(no token left in the bucket)")

	// Offered 4 writes a second, twice its rate, for a minute and a
	// second, the bucket turns half away, and grows once it has been
	// saturated for a minute.
	for i := range 61 * 4 {
		now = now.Add(250 * time.Millisecond)
		l.Admit("logs", fmt.Sprint("log-", i), "team-b")
		if i == 30*4 {
			fmt.Println("rate after 30s:", l.Stats()[0].Rate)
		}
	}
	for _, b := range l.Stats() {
		fmt.Printf("%s: rate %v, %d admitted, %d refused\n", b.Bucket, b.Rate, b.Admitted, b.Refused())
		for _, t := range b.Tenants {
			fmt.Printf("  %s: %d admitted, %d refused\n", t.Tenant, t.Admitted, t.Refused())
		}
	}
	// Output:
	// a Admitted
	// b Admitted
	// c RateLimited
	// a RateLimited (no token left in the bucket)
	// rate after 30s: 2
	// logs: rate 4, 125 admitted, 123 refused
	//   team-a: 2 admitted, 2 refused
	//   team-b: 123 admitted, 121 refused
}
