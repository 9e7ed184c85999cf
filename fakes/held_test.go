package fakes_test

import (
	"fmt"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/fakes/faultproxy"
)

// TestHeldRequestAfterReset: a whole JSON upload held in a stalled path
// when its client resets is never stored if the path drops what it held
// (faultproxy.Drop), and is stored when the stall ends if the path
// delivers it (faultproxy.Deliver), as behind a front end that already
// read it: the client's reset does not withdraw the write.
func TestHeldRequestAfterReset(t *testing.T) {
	for _, tc := range []struct {
		held   faultproxy.Held
		stored bool
	}{
		{faultproxy.Drop, false},
		{faultproxy.Deliver, true},
	} {
		t.Run(tc.held.String(), func(t *testing.T) {
			srv, cc := start(t)
			addr := srv.HTTPURL()[len("http://"):]
			p, err := faultproxy.New(addr, faultproxy.WithHeld(tc.held))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			p.Inject(faultproxy.Fault{Kind: faultproxy.Stall, Dir: faultproxy.Up, Stall: 200 * time.Millisecond})
			c, err := net.Dial("tcp", p.Addr())
			if err != nil {
				t.Fatal(err)
			}
			body := payload(10000, 3)
			req := fmt.Sprintf("POST /upload/storage/v1/b/%s/o?uploadType=media&name=held HTTP/1.1\r\nHost: %s\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n", bucket, addr, len(body))
			if _, err := c.Write(append([]byte(req), body...)); err != nil {
				t.Fatal(err)
			}
			ctx := ctxT(t)
			for p.Stats().Stalls == 0 { // the stall fires on the first byte
				select {
				case <-ctx.Done():
					t.Fatal("the stall never fired")
				case <-time.After(time.Millisecond):
				}
			}
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
			if err := p.Settle(ctx); err != nil {
				t.Fatal(err)
			}
			if !tc.stored {
				if st := p.Stats(); st.HeldDropped != int64(len(req)+len(body)) || st.BytesUp != 0 {
					t.Fatalf("stats %+v: want the whole request dropped", st)
				}
				absent(t, cc, "held")
				return
			}
			if code := serverCode(t, srv, "objects.insert", "held"); code != codes.OK {
				t.Fatalf("the delivered upload ended with %v", code)
			}
			sameBytes(t, "held", get(t, cc, "held"), body)
		})
	}
}
