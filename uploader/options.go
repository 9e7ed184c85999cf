package uploader

import (
	"errors"
	"fmt"

	"google.golang.org/api/option"
	"google.golang.org/api/option/internaloption"

	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader/internal/knob"
	"github.com/objup/objup/uploader/internal/telemetry"
)

// maxChunkSize is the largest chunk size WithChunkSize accepts: 64 MiB. A
// chunk is one buffer held per upload, and an object up to the chunk size
// goes out in one call, so a chunk much larger than the official client's
// 16 MiB default only costs memory: the service's throughput does not grow
// with it, since every message carries at most 2 MiB anyway.
const maxChunkSize = 64 << 20

// Options are read in three steps, as connect-go's newClientConfig does:
// the defaults (newClientConfig, Writer.init), every option applied in
// order (an option only records its value), then one validation pass
// (clientConfig.validate, writerConfig.validate), which reports the first
// invalid setting before anything is dialled or sent.

// clientConfig is what the client options set.
type clientConfig struct {
	alloc        pool.Allocator
	chunkSize    int
	tenantLimits TenantLimits
	retry        retryConfig
	knob         knob.Client // the machinery's settings (package experimental)
	telemetry    telemetry.Config
	http         bool
	xmlEndpoint  string // WithXMLEndpoint
}

// newClientConfig returns the defaults.
func newClientConfig() clientConfig {
	return clientConfig{retry: defaultRetryConfig(), knob: knob.Defaults()}
}

// apply applies opts in order and returns those of
// google.golang.org/api/option, which the transport takes.
func (c *clientConfig) apply(opts []option.ClientOption) []option.ClientOption {
	var api []option.ClientOption
	for _, o := range opts {
		switch o := o.(type) {
		case interface{ applyClient(*clientConfig) }:
			o.applyClient(c)
		case *knob.ClientOption:
			if o.Set != nil {
				o.Set(&c.knob)
			}
		default:
			api = append(api, o)
		}
	}
	return api
}

// Client-wide options. They are option.ClientOption values, so they mix freely
// with the google.golang.org/api/option ones (credentials, endpoint, gRPC
// connection) in one NewClient call.

type clientOptionFunc struct {
	internaloption.EmbeddableAdapter
	f func(*clientConfig)
}

func (o *clientOptionFunc) applyClient(c *clientConfig) { o.f(c) }

func newClientOption(f func(*clientConfig)) option.ClientOption {
	return &clientOptionFunc{f: f}
}

// SharedOption is an option that configures either a whole Client (in
// NewClient, as default for all its Writers) or one Writer (in NewWriter,
// Upload or Item.Options), where it overrides the client's setting.
type SharedOption interface {
	option.ClientOption
	WriterOption
}

type sharedOption struct {
	internaloption.EmbeddableAdapter
	chunkSize int
	retry     *Retry
}

func (o *sharedOption) applyClient(c *clientConfig) {
	if o.chunkSize != 0 {
		c.chunkSize = o.chunkSize
	}
	if o.retry != nil {
		c.retry.merge(o.retry)
	}
}

func (o *sharedOption) applyWriter(c *writerConfig) {
	if o.chunkSize != 0 {
		c.chunkSize = o.chunkSize
	}
	if o.retry != nil {
		if !c.ownRetry {
			// The Writer shares the client's retry settings until it
			// changes them.
			own := *c.retry
			c.retry, c.ownRetry = &own, true
		}
		c.retry.merge(o.retry)
	}
}

// WithPool makes every Writer of the client take its chunk buffers from a (for
// instance a pool.Pool with a byte budget, or the caller's own Allocator). Its
// BufferSize must be a positive multiple of pool.Quantum, at most 64 MiB.
// The default is pool.Default(), shared by the whole process.
func WithPool(a pool.Allocator) option.ClientOption {
	return newClientOption(func(c *clientConfig) { c.alloc = a })
}

// WithChunkSize sets the size of a chunk: a positive multiple of pool.Quantum
// (256 KiB), at most 64 MiB; anything else is rejected by NewClient or
// NewWriter. Objects up to this size go out in one WriteObject call; larger
// ones stream through a resumable session, one chunk buffer per chunk in
// flight. Chunks are sent in messages of at most 2 MiB, each with its own
// CRC32C.
//
// On NewClient it applies to every Writer, which then take their buffers from
// a pool of that size owned by the client (it cannot be combined with
// WithPool, whose BufferSize is the chunk size). On NewWriter it applies to
// that Writer only, which takes its buffers from the client's pool of that
// size.
func WithChunkSize(n int) SharedOption {
	if n == 0 {
		n = -1 // an explicit 0 is invalid, not "unset"
	}
	return &sharedOption{chunkSize: n}
}

// WithRetry configures retries (see Retry): on NewClient it sets the
// defaults of every Writer; on NewWriter it changes them for that Writer.
// Zero fields keep the setting they would have without it. Invalid
// settings (negative durations or counts) are rejected by NewClient or
// NewWriter.
func WithRetry(r Retry) SharedOption {
	return &sharedOption{retry: &r}
}

// validate is the one check of the client's configuration.
func (c *clientConfig) validate() error {
	k := &c.knob
	switch {
	case c.alloc != nil && c.chunkSize != 0:
		return errors.New("WithChunkSize and WithPool exclude each other: the pool's BufferSize is the chunk size")
	case k.InFlightSet && k.InFlight < 1:
		return fmt.Errorf("chunks in flight %d must be at least 1", k.InFlight)
	case k.MaxInFlight < knob.MinWindow:
		return fmt.Errorf("max in flight %d must be at least %d (4 MiB)", k.MaxInFlight, knob.MinWindow)
	case k.KeepaliveTime < 0 || k.KeepaliveTimeout < 0:
		return fmt.Errorf("keepalive time %v and timeout %v must not be negative", k.KeepaliveTime, k.KeepaliveTimeout)
	case k.ConnectTimeout <= 0:
		return fmt.Errorf("connect timeout %v must be positive", k.ConnectTimeout)
	case k.RampSet && (k.RampFrom <= 0 || k.RampEvery <= 0):
		return fmt.Errorf("write ramp from %v writes a second, doubling every %v: both must be positive", k.RampFrom, k.RampEvery)
	case c.xmlEndpoint != "" && !isBaseURL(c.xmlEndpoint):
		return fmt.Errorf("XML endpoint %q is not an http:// or https:// URL with a host and no path", c.xmlEndpoint)
	case c.tenantLimits.Uploads < 0 || c.tenantLimits.Bytes < 0 || c.tenantLimits.Writes < 0:
		l := c.tenantLimits
		return fmt.Errorf("tenant limits of %d uploads, %d bytes and %v writes a second must not be negative", l.Uploads, l.Bytes, l.Writes)
	}
	if c.chunkSize != 0 {
		if err := checkChunkSize(c.chunkSize); err != nil {
			return err
		}
	}
	if c.alloc != nil {
		if n := c.alloc.BufferSize(); n <= 0 || n%pool.Quantum != 0 || n > maxChunkSize {
			return fmt.Errorf("pool buffer size %d is not a positive multiple of %d (256 KiB) up to %d (64 MiB)", n, pool.Quantum, maxChunkSize)
		}
	}
	return c.retry.validate()
}

func checkChunkSize(n int) error {
	if n <= 0 || n%pool.Quantum != 0 || n > maxChunkSize {
		return fmt.Errorf("chunk size %d is not a positive multiple of %d (256 KiB) up to %d (64 MiB)", n, pool.Quantum, maxChunkSize)
	}
	return nil
}
