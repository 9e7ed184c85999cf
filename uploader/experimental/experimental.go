package experimental

import (
	"time"

	"google.golang.org/api/option"

	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader"
	"github.com/objup/objup/uploader/internal/knob"
)

// Defaults of the settings below.
const (
	// DefaultMaxInFlight is the most bytes one upload may have sent and
	// not acknowledged unless WithMaxInFlight says otherwise: 64 MiB keep
	// a path of 100 ms at 600 MB/s full.
	DefaultMaxInFlight = knob.DefaultMaxInFlight
	// DefaultKeepaliveTime and DefaultKeepaliveTimeout: a connection on
	// which an RPC is in flight and nothing arrived for 30 s is pinged,
	// and closed if the ping is not answered within 20 s, so the RPCs on
	// it fail and are retried on a new connection. These are the values
	// the official client's documentation recommends; gRPC refuses pings
	// more often than every 10 s.
	DefaultKeepaliveTime    = knob.DefaultKeepaliveTime
	DefaultKeepaliveTimeout = knob.DefaultKeepaliveTimeout
	// DefaultConnectTimeout bounds the opening of a gRPC connection: TCP,
	// TLS and the HTTP/2 handshake, which take a few round trips (under
	// half a second at 100 ms RTT), or a few seconds when a SYN is lost
	// and resent.
	DefaultConnectTimeout = knob.DefaultConnectTimeout
	// DefaultConnectionPool is the number of gRPC connections a client
	// spreads its uploads over, unless option.WithGRPCConnectionPool says
	// otherwise.
	DefaultConnectionPool = knob.DefaultConnectionPool
	// AfterContext bounds how long a call of the Writer, Upload or
	// UploadMany runs once its context ended: what it still does then
	// (finding out whether a request whose answer was lost was applied,
	// waiting for gRPC to let go of the upload's buffers) takes at most
	// about this long. Work that must go on after that, such as deleting
	// a parallel upload's temporary objects, runs in the background,
	// bounded, and Client.Close waits for it.
	AfterContext = knob.AfterContext
)

func clientOption(set func(*knob.Client)) option.ClientOption {
	return &knob.ClientOption{Set: set}
}

func writerOption(set func(*knob.Writer)) uploader.WriterOption {
	return knob.NewWriterOption(set).(uploader.WriterOption)
}

// WithChunksInFlight fixes how many chunks of one upload may be handed to
// the session and not yet acknowledged as persisted by the service: the
// memory of one upload is at most n+1 chunks, and its window does not
// adapt to the path (see WithMaxInFlight). Consecutive chunks go out
// together in messages of up to 2 MiB, so a window of at least 2 MiB keeps
// messages at the service's limit. n must be at least 1.
func WithChunksInFlight(n int) option.ClientOption {
	return clientOption(func(c *knob.Client) { c.InFlight, c.InFlightSet = n, true })
}

// WithMaxInFlight bounds the window of one upload: the bytes it may have
// sent and not yet acknowledged as persisted, which is also the memory its
// chunks take at most. The window starts at 16 MiB (the official Writer's
// chunk; near the service acknowledgements return long before that much
// is in flight) and grows fourfold, one round trip after another, while
// the acknowledged rate keeps rising, up to n; it stops growing once the
// rate does not rise, and halves, down to 4 MiB, when the pool's budget
// (pool.WithBudget) runs out, so uploads share the budget instead of one
// holding all of it. Over the JSON API one PUT carries half the window. n
// must be at least 4 MiB; the default is DefaultMaxInFlight.
// WithChunksInFlight fixes the window instead.
func WithMaxInFlight(n int64) option.ClientOption {
	return clientOption(func(c *knob.Client) { c.MaxInFlight = n })
}

// WithKeepalive sets the gRPC keepalive of the client's connections: after
// t without anything received while an RPC is in flight, the client pings
// the server, and closes the connection if no answer comes within timeout.
// That is how a connection that silently stopped forwarding (a dead NAT
// entry, a black-holing proxy) is detected and replaced. Pings are never
// sent on an idle connection. t is raised to gRPC's minimum of 10 s; zero
// values keep the defaults (DefaultKeepaliveTime, DefaultKeepaliveTimeout);
// negative ones are rejected.
func WithKeepalive(t, timeout time.Duration) option.ClientOption {
	return clientOption(func(c *knob.Client) {
		if t != 0 {
			c.KeepaliveTime = t
		}
		if timeout != 0 {
			c.KeepaliveTimeout = timeout
		}
		c.KeepaliveOff = false
	})
}

// WithoutKeepalive turns the connections' keepalive off: a silently dead
// connection is then only noticed through the attempt timeout of each RPC
// (see [uploader.Retry]), and not replaced.
func WithoutKeepalive() option.ClientOption {
	return clientOption(func(c *knob.Client) { c.KeepaliveOff = true })
}

// WithConnectTimeout bounds how long a new gRPC connection may take to
// become ready (TCP, TLS and the HTTP/2 handshake). A connection that has
// not completed its handshake by then (a server or middlebox that accepts
// the TCP connection and then says nothing) is closed, the RPCs waiting
// for it fail with UNAVAILABLE and are retried, and the next attempt dials
// anew. Keepalive cannot help there: it only watches connections that
// became ready. gRPC's own bound is 20 s; the default is
// DefaultConnectTimeout. It does not apply to a connection passed with
// option.WithGRPCConn, nor to WithHTTP clients. d must be positive.
func WithConnectTimeout(d time.Duration) option.ClientOption {
	return clientOption(func(c *knob.Client) { c.ConnectTimeout = d })
}

// WithoutAdmission turns the client's admission stage off: every write
// goes out at once, and a write the service refuses for load (429,
// RESOURCE_EXHAUSTED, 503) is only retried with the backoff, as with the
// official client. Use it when the application paces its writes itself.
//
// By default every object write of a client (a one-shot upload, a
// resumable session's start, a parallel upload's parts, composes and
// deletes; not the data of a session) passes one admission stage per
// bucket. It costs an atomic load per write until the service first
// pushes back; from then on it admits writes at a rate it learns from the
// service's answers: cut to a share of what was answered when pushed
// back, grown again along a cubic curve while writes succeed. Writes wait
// for their turn as their context allows, never failing for it, a tenant
// at a time and within a tenant oldest first. Since retries pass the same
// stage, they cannot multiply the load, and several processes writing to
// one bucket each settle at a share of it without talking to each other.
// A refusal for one object name's own rate (about one write a second per
// name) does not slow the bucket.
func WithoutAdmission() option.ClientOption {
	return clientOption(func(c *knob.Client) { c.NoAdmission = true })
}

// WithWriteRamp makes the client start each bucket's writes at from a
// second and at most double that rate every every, as GCS asks of a new
// bucket or a new prefix (about 1,000 writes a second at first, doubling
// no faster than every 20 minutes: WithWriteRamp(1000, 20*time.Minute)),
// so that a fleet coming up does not meet the bucket's limit all at once.
// Pushback still cuts the rate below the ramp. Both must be positive; it
// has no effect WithoutAdmission.
func WithWriteRamp(from float64, every time.Duration) option.ClientOption {
	return clientOption(func(c *knob.Client) { c.RampFrom, c.RampEvery, c.RampSet = from, every, true })
}

// WithMD5 computes the object's MD5 while writing and sends it with the
// last message, so the service verifies it too. It costs a second pass
// over the data; uploader.WithSendMD5 sends an MD5 the caller already has
// instead. It excludes WithSendMD5, appendable objects and parallel
// composite uploads.
func WithMD5() uploader.WriterOption {
	return writerOption(func(w *knob.Writer) { w.MD5 = true })
}

// WithoutCRC32C stops sending CRC32C checksums (per message and for the
// whole object). They are sent by default and cost one pass over the
// data. It excludes parallel composite uploads, which check the composed
// object's CRC32C.
func WithoutCRC32C() uploader.WriterOption {
	return writerOption(func(w *knob.Writer) { w.NoCRC32C = true })
}

// Allocator returns the allocator c's Writers take their chunk buffers
// from (uploader.WithPool's, or the pool of the client's chunk size).
func Allocator(c *uploader.Client) pool.Allocator { return knob.Allocator(c) }
