package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/objup/objup/fakes/internal/cmdtest"
)

// hasRow reports whether the table text has a line of exactly these
// fields.
func hasRow(text string, fields ...string) bool {
	for line := range strings.Lines(text) {
		if slices.Equal(strings.Fields(line), fields) {
			return true
		}
	}
	return false
}

// TestRunCapacity runs fakegcs with a write capacity of one write (and one
// more every 1,000 s): tenant t1's write passes, t2's is refused with 429;
// /_objup/stats and the report at exit count both.
func TestRunCapacity(t *testing.T) {
	p := cmdtest.Start(t, run, "-bucket", "one", "-write-rate", "0.001", "-write-burst", "1", "-object-rate", "-1", "-share-503", "0")
	grpcAddr, httpURL := addrs(t, scan(p.Stdout, nil))
	exercise(t, grpcAddr, httpURL, "one")
	req, _ := http.NewRequest("POST", httpURL+"/upload/storage/v1/b/one/o?uploadType=media&name=more", strings.NewReader("x"))
	req.Header.Set("X-Scope-OrgID", "t2")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), `"reason":"rateLimitExceeded"`) {
		t.Fatalf("second write: %s %s", resp.Status, body)
	}

	resp, err = http.Get(httpURL + "/_objup/stats")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Capacity []struct {
			Bucket      string
			Rate        float64
			Admitted    int64
			RateLimited int64 `json:"rateLimited"`
			Tenants     []struct {
				Tenant      string
				Admitted    int64
				RateLimited int64 `json:"rateLimited"`
			}
		}
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(st.Capacity); got != "[{one 0.001 1 1 [{t1 1 0} {t2 0 1}]}]" {
		t.Fatalf("capacity %s", got)
	}

	stderr := p.StopOK(t)
	out := stderr
	if !strings.Contains(out, "fakegcs: write capacity per bucket and tenant") ||
		!hasRow(out, "bucket", "tenant", "rate/s", "admitted", "429", "503", "name", "429") ||
		!hasRow(out, "one", "(all)", "0.001", "1", "1", "0", "0") ||
		!hasRow(out, "t1", "1", "0", "0", "0") || !hasRow(out, "t2", "0", "1", "0", "0") {
		t.Fatalf("stderr:\n%s", out)
	}
}

func TestRunCapacityErrors(t *testing.T) {
	cmdtest.CheckUsage(t, run, []cmdtest.UsageError{
		{Args: []string{"-share-503", "0.5"}, Code: 2, Want: "-share-503 need -write-rate or -object-rate"},
		{Args: []string{"-write-burst", "3", "-autoscale-after", "1s"}, Code: 2, Want: "-autoscale-after, -write-burst need"},
		{Args: []string{"-write-rate", "-1"}, Code: 2, Want: "rate -1 is negative"},
		{Args: []string{"-write-rate", "10", "-share-503", "2"}, Code: 2, Want: "share of 503 2 is not between 0 and 1"},
		{Args: []string{"-write-rate", "10", "-autoscale-max", "5"}, Code: 2, Want: "autoscale max 5 is below the rate 10"},
	})
}
