package fakes_test

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"strings"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/fakes/capacity"
)

// A bucket that takes two writes at once and then one every 1,000
// seconds: the third upload is refused with GCS's 429, and the counts
// say who was refused.
func ExampleWithCapacity() {
	srv, err := fakes.New(fakes.WithBucket("logs"),
		fakes.WithCapacity(capacity.Config{Rate: 0.001, Burst: 2}))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	for _, name := range []string{"a", "b", "c"} {
		req, _ := http.NewRequest("POST", srv.HTTPURL()+"/upload/storage/v1/b/logs/o?uploadType=media&name="+name,
			strings.NewReader("data"))
		req.Header.Set("X-Scope-OrgID", "team-a")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		var body struct {
			Error struct {
				Errors []struct{ Domain, Reason string }
			}
		}
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		fmt.Println(name, resp.StatusCode, body.Error.Errors)
	}
	for _, b := range srv.CapacityStats() {
		for _, t := range b.Tenants {
			fmt.Printf("%s, %s: %d admitted, %d refused\n", b.Bucket, t.Tenant, t.Admitted, t.Refused())
		}
	}
	// Output:
	// a 200 []
	// b 200 []
	// c 429 [{usageLimits rateLimitExceeded}]
	// logs, team-a: 2 admitted, 1 refused
}
