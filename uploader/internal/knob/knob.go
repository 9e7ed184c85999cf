package knob

import (
	"time"

	"google.golang.org/api/option/internaloption"

	"github.com/objup/objup/pool"
)

// Defaults of the machinery's settings.
const (
	// DefaultMaxInFlight is the most bytes one upload may have sent and
	// not acknowledged: 64 MiB keep a path of 100 ms at 600 MB/s full.
	DefaultMaxInFlight = 64 << 20
	// MinWindow is the least window: two chunks of the largest size.
	MinWindow = 4 << 20
	// DefaultKeepaliveTime and DefaultKeepaliveTimeout are the official
	// client's recommended gRPC keepalive.
	DefaultKeepaliveTime    = 30 * time.Second
	DefaultKeepaliveTimeout = 20 * time.Second
	// DefaultConnectTimeout bounds the opening of a gRPC connection.
	DefaultConnectTimeout = 5 * time.Second
	// DefaultConnectionPool is the number of gRPC connections of a client.
	DefaultConnectionPool = 4
	// AfterContext bounds how long a call runs once its context ended.
	AfterContext = time.Second
)

// Client is the machinery's client-wide settings.
type Client struct {
	InFlight         int // chunks in flight, fixed, if InFlightSet; else the window adapts
	InFlightSet      bool
	MaxInFlight      int64 // the adaptive window's bound
	KeepaliveTime    time.Duration
	KeepaliveTimeout time.Duration
	KeepaliveOff     bool
	ConnectTimeout   time.Duration
	NoAdmission      bool
	RampFrom         float64 // writes a second at first; 0: no ramp
	RampEvery        time.Duration
	RampSet          bool // a ramp was asked for (its values are checked)
}

// Defaults returns the client-wide defaults.
func Defaults() Client {
	return Client{
		MaxInFlight:      DefaultMaxInFlight,
		KeepaliveTime:    DefaultKeepaliveTime,
		KeepaliveTimeout: DefaultKeepaliveTimeout,
		ConnectTimeout:   DefaultConnectTimeout,
	}
}

// Writer is the machinery's settings of one Writer.
type Writer struct {
	MD5      bool // compute and send the object's MD5
	NoCRC32C bool // send no CRC32C
}

// ClientOption sets client-wide settings; package uploader's NewClient
// applies it in order with the others.
type ClientOption struct {
	internaloption.EmbeddableAdapter
	Set func(*Client)
}

// Hooks that package uploader sets when it is initialised.
var (
	// NewWriterOption returns an uploader.WriterOption that applies set.
	NewWriterOption func(set func(*Writer)) any
	// Allocator returns the pool.Allocator of an *uploader.Client.
	Allocator func(client any) pool.Allocator
)
