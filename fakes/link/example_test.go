package link_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/objup/objup/fakes/link"
)

// A server behind a simulated path of 20 ms round trip: every request to
// it takes at least one round trip more than over loopback.
func Example() {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	ln := link.Listen(raw, link.Config{RTT: 20 * time.Millisecond, Bandwidth: 100e6})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from 10 ms away")
	})}
	go srv.Serve(ln)
	defer srv.Close()

	start := time.Now()
	resp, err := http.Get("http://" + raw.Addr().String())
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(string(body), time.Since(start) >= 20*time.Millisecond)
	// Output: hello from 10 ms away true
}
