package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
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
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-bucket", "one", "-write-rate", "0.001", "-write-burst", "1", "-object-rate", "-1", "-share-503", "0"}, pw, &stderr)
		pw.Close()
	}()
	grpcAddr, httpURL := addrs(t, scan(pr, nil))
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

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit status %d, stderr %q", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
	out := stderr.String()
	if !strings.Contains(out, "fakegcs: write capacity per bucket and tenant") ||
		!hasRow(out, "bucket", "tenant", "rate/s", "admitted", "429", "503", "name", "429") ||
		!hasRow(out, "one", "(all)", "0.001", "1", "1", "0", "0") ||
		!hasRow(out, "t1", "1", "0", "0", "0") || !hasRow(out, "t2", "0", "1", "0", "0") {
		t.Fatalf("stderr:\n%s", out)
	}
}

func TestRunCapacityErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-share-503", "0.5"}, "-share-503 need -write-rate or -object-rate"},
		{[]string{"-write-burst", "3", "-autoscale-after", "1s"}, "-autoscale-after, -write-burst need"},
		{[]string{"-write-rate", "-1"}, "rate -1 is negative"},
		{[]string{"-write-rate", "10", "-share-503", "2"}, "share of 503 2 is not between 0 and 1"},
		{[]string{"-write-rate", "10", "-autoscale-max", "5"}, "autoscale max 5 is below the rate 10"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), tc.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) || stdout.Len() != 0 {
			t.Errorf("run(%q) = %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, stdout.String(), stderr.String(), tc.want)
		}
	}
}
