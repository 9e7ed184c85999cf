package sink

import (
	"github.com/objup/objup/fakes/capacity"
	"github.com/objup/objup/fakes/link"
)

// Option configures [New].
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	addr       string
	md5        bool
	link       link.Config
	maxStreams int
	compose    bool            // WithCompose
	zonal      map[string]bool // WithZonalBucket
	capacity   *capacity.Config
	// copyDecode decodes write messages as grpc-go's proto codec does
	// (content copied): the baseline of the sink's codec, in benchmarks.
	copyDecode bool
}

// WithAddr sets the TCP address ("host:port") the sink listens on, with
// the rules of [WithGRPCAddr]: the default is [DefaultAddr], port 0 picks a
// free port, and an empty host means 127.0.0.1.
func WithAddr(addr string) Option {
	return optionFunc(func(c *config) { c.addr = addr })
}

// WithMD5 makes the sink hash every write's content with MD5 from its
// first byte, so that an MD5 declared only at finish_write is checked too,
// and the Object it answers carries the MD5. It costs roughly 1 to 2 CPU
// seconds per GiB on the server.
func WithMD5() Option {
	return optionFunc(func(c *config) { c.md5 = true })
}

// WithLink puts a simulated network path in front of the sink's port, as
// [github.com/objup/objup/fakes.WithLink] does for the fake.
func WithLink(cfg link.Config) Option {
	return optionFunc(func(c *config) { c.link = cfg })
}

// WithMaxStreams caps the concurrent streams of one connection to the
// sink at n, as [github.com/objup/objup/fakes.WithMaxStreams] does for the
// fake; 0 is gRPC's limit.
func WithMaxStreams(n int) Option {
	return optionFunc(func(c *config) { c.maxStreams = n })
}
