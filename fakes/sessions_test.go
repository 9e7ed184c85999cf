package fakes_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/fakes/link"
)

// clock is a settable time for a server's session registry.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) read() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// startJSONSession opens a JSON resumable session and returns its URI.
func startJSONSession(t *testing.T, srv *fakes.Server, name string) string {
	t.Helper()
	resp, err := http.Post(srv.HTTPURL()+"/upload/storage/v1/b/"+bucket+"/o?uploadType=resumable&name="+name, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusOK || loc == "" {
		t.Fatalf("start: %s, Location %q", resp.Status, loc)
	}
	return loc
}

// jsonStatus asks a JSON session for its status and returns the HTTP status.
func jsonStatus(t *testing.T, uri string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, uri, nil)
	req.Header.Set("Content-Range", "bytes */*")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestSessionsExpire: a resumable session of either API unused for longer
// than the expiry is gone (404, NotFound), one in use is not, and the
// server counts the expired ones.
func TestSessionsExpire(t *testing.T) {
	srv, cc := start(t, fakes.WithSessionExpiry(time.Hour))
	clk := &clock{now: time.Now()}
	fakes.SetClock(srv, clk.read)
	ctx := ctxT(t)

	idle := startResumable(t, cc, spec("idle-grpc"))
	idleURI := startJSONSession(t, srv, "idle-json")
	busy := startResumable(t, cc, spec("busy-grpc"))
	clk.advance(50 * time.Minute)
	if _, err := queryWriteStatus(ctx, cc, busy); err != nil {
		t.Fatalf("busy session after 50 minutes: %v", err)
	}
	clk.advance(20 * time.Minute) // idle: 70 minutes; busy: 20

	_, err := queryWriteStatus(ctx, cc, idle)
	wantCode(t, err, codes.NotFound)
	if st := jsonStatus(t, idleURI); st != http.StatusNotFound {
		t.Fatalf("expired JSON session: %d, want 404", st)
	}
	if _, err := queryWriteStatus(ctx, cc, busy); err != nil {
		t.Fatalf("the session used 20 minutes ago expired: %v", err)
	}
	if got := srv.Sessions(); got.Expired != 2 || got.Open != 1 {
		t.Fatalf("sessions %+v, want 2 expired and 1 open", got)
	}
}

// TestSessionsAreCapped: abandoned sessions never pass the cap; the one
// unused longest expires first, and a session in use stays.
func TestSessionsAreCapped(t *testing.T) {
	srv, cc := start(t, fakes.WithMaxSessions(100))
	ctx := ctxT(t)
	first := startResumable(t, cc, spec("first"))
	for i := range 1000 {
		startResumable(t, cc, spec(fmt.Sprintf("abandoned-%d", i)))
		if i%50 == 0 {
			// Keeps first in use, so it is never the oldest.
			if _, err := queryWriteStatus(ctx, cc, first); err != nil {
				t.Fatalf("after %d sessions, the session in use expired: %v", i, err)
			}
		}
	}
	got := srv.Sessions()
	if got.Open != 100 || got.Expired != 901 {
		t.Fatalf("sessions %+v, want 100 open and 901 expired", got)
	}
	resp, err := http.Get(srv.HTTPURL() + "/_objup/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var stats struct{ Sessions fakes.SessionStats }
	if err := json.NewDecoder(resp.Body).Decode(&stats); err != nil || stats.Sessions != got {
		t.Fatalf("stats: %v, sessions %+v, want %+v", err, stats.Sessions, got)
	}
}

// TestSessionOptionsValidated: a session expiry or cap that makes no sense
// is refused by New.
func TestSessionOptionsValidated(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  fakes.Option
		want string
	}{
		{"zero expiry", fakes.WithSessionExpiry(0), "session expiry 0s must be positive"},
		{"no sessions", fakes.WithMaxSessions(0), "max sessions 0 must be at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := fakes.New(tc.opt)
			if err == nil {
				srv.Close()
				t.Fatal("New succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// TestLinkDelaysBothPorts: a server WithLink answers a gRPC call and an
// HTTP request a round trip later than over loopback (a lower bound: a
// loaded machine only adds to it).
func TestLinkDelaysBothPorts(t *testing.T) {
	const rtt = 30 * time.Millisecond
	srv, cc := start(t, fakes.WithLink(link.Config{RTT: rtt}))
	ctx := ctxT(t)
	// The first call pays for the connection's handshakes too.
	_, _ = queryWriteStatus(ctx, cc, "warm-up")
	best := time.Hour
	for range 3 {
		t0 := time.Now()
		_, err := queryWriteStatus(ctx, cc, "no-such-upload")
		wantCode(t, err, codes.NotFound)
		best = min(best, time.Since(t0))
	}
	if best < rtt {
		t.Fatalf("a gRPC call through a link of %v took %v", rtt, best)
	}
	t0 := time.Now()
	if _, st := httpGet(t, srv, "absent"); st != http.StatusNotFound {
		t.Fatalf("GET: %d", st)
	}
	if d := time.Since(t0); d < rtt {
		t.Fatalf("an HTTP request through a link of %v took %v", rtt, d)
	}
}
