package fakes

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/objup/objup/fakes/capacity"
	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/fakes/link"
)

// Option configures [New]. Options apply in order; New then validates the
// result once and reports every problem it finds.
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// DefaultAddr is the address both servers listen on unless told otherwise: a
// free port on the IPv4 loopback interface.
const DefaultAddr = "127.0.0.1:0"

// DefaultCallLog is the number of recent calls a server keeps for
// [Server.Calls] unless [WithCallLog] says otherwise.
const DefaultCallLog = 10000

type config struct {
	buckets       []string
	zonal         []string // WithZonalBucket
	grpcAddr      string
	httpAddr      string
	httpsAddr     string // WithHTTPSAddr; "": no HTTPS server
	callLog       int
	sessionExpiry time.Duration
	maxSessions   int
	maxStreams    int
	link          link.Config
	commitDelay   time.Duration
	commitDraw    func() time.Duration  // WithCommitDelays
	deadlineDrop  bool                  // WithDeadlineDrop
	commitWait    func(context.Context) // WithCommitWait, for tests
	creds         map[string]Role       // WithCredential
	capacity      []bucketCapacity      // WithCapacity, WithBucketCapacity
	capacityClock func() time.Time      // the capacity's clock, for tests
	dataDir       string                // WithDataDir; "": in memory
}

func newConfig(opts []Option) (*config, error) {
	c := &config{grpcAddr: DefaultAddr, httpAddr: DefaultAddr, callLog: DefaultCallLog,
		sessionExpiry: DefaultSessionExpiry, maxSessions: DefaultMaxSessions}
	for _, o := range opts {
		o.apply(c)
	}
	return c, c.validate()
}

// WithCommitDelay makes every write that stores an object (the writes
// [WithCommitDelays] lists) wait d before it stores it, as a backend slow
// to commit does. The object is stored even if the client went away in
// the meantime, as GCS may store an object whose last message it
// received: a test of what a client leaves behind when it gives up on a
// write whose end is out. d must not be negative. [WithCommitDelays]
// draws a delay per write instead.
func WithCommitDelay(d time.Duration) Option {
	return optionFunc(func(c *config) { c.commitDelay, c.commitDraw = d, nil })
}

// WithBucket creates the bucket name when the server starts. Give it once per
// bucket; naming a bucket twice is harmless. The name is the bare bucket name
// ("logs"), not the resource name ("projects/_/buckets/logs"), and must
// follow the GCS bucket naming rules.
func WithBucket(name string) Option {
	return optionFunc(func(c *config) { c.buckets = append(c.buckets, name) })
}

// WithZonalBucket creates the zonal bucket name when the server starts,
// as GCS's zonal (Rapid) buckets are: its location type is "zone" and its
// storage class, and that of every object in it, is RAPID. A zonal bucket
// accepts only appendable writes (BidiWriteObject with
// write_object_spec.appendable, and takeovers of its appendable objects):
// any other write into it, a WriteObject, a BidiWriteObject or
// StartResumableWrite without appendable, a JSON API upload, a compose,
// copy or rewrite with it as the destination, fails with
// codes.FailedPrecondition (HTTP 400 over JSON) and stores nothing. Give
// it once per bucket; a name given to both WithBucket and WithZonalBucket
// is an error of [New].
func WithZonalBucket(name string) Option {
	return optionFunc(func(c *config) { c.zonal = append(c.zonal, name) })
}

// WithGRPCAddr sets the TCP address ("host:port") of the gRPC server. The
// default is [DefaultAddr]. Port 0 picks a free port; an empty host means
// 127.0.0.1, so ":9090" stays on loopback. Give "0.0.0.0:9090" to listen on
// every interface.
func WithGRPCAddr(addr string) Option {
	return optionFunc(func(c *config) { c.grpcAddr = addr })
}

// WithHTTPAddr sets the TCP address of the JSON API server, with the same
// rules as [WithGRPCAddr].
func WithHTTPAddr(addr string) Option {
	return optionFunc(func(c *config) { c.httpAddr = addr })
}

// WithCallLog sets how many recent calls the server keeps for
// [Server.Calls]: a ring of n records, so the log's memory stays bounded
// however long the server runs. 0 keeps none; the counters of
// [Server.CallCounts] count every call either way. The default is
// [DefaultCallLog].
func WithCallLog(n int) Option {
	return optionFunc(func(c *config) { c.callLog = n })
}

func (c *config) validate() error {
	var errs []string
	for _, b := range c.buckets {
		if err := store.CheckBucketName(b); err != nil {
			errs = append(errs, err.Error())
		}
	}
	for _, b := range c.zonal {
		if err := store.CheckBucketName(b); err != nil {
			errs = append(errs, "zonal bucket: "+err.Error())
		}
		if slices.Contains(c.buckets, b) {
			errs = append(errs, fmt.Sprintf("bucket %q is given both as a zonal bucket and as one that is not", b))
		}
	}
	if c.commitDelay < 0 {
		errs = append(errs, fmt.Sprintf("commit delay %v is negative", c.commitDelay))
	}
	errs = append(errs, c.validateCreds()...)
	if c.callLog < 0 {
		errs = append(errs, fmt.Sprintf("call log size %d is negative", c.callLog))
	}
	if c.sessionExpiry <= 0 {
		errs = append(errs, fmt.Sprintf("session expiry %v must be positive", c.sessionExpiry))
	}
	if c.link.RTT < 0 || c.link.Bandwidth < 0 {
		errs = append(errs, fmt.Sprintf("link %+v: the RTT and the bandwidth must not be negative", c.link))
	}
	if c.maxStreams < 0 {
		errs = append(errs, fmt.Sprintf("max streams %d is negative", c.maxStreams))
	}
	if c.maxSessions < 1 {
		errs = append(errs, fmt.Sprintf("max sessions %d must be at least 1", c.maxSessions))
	}
	for _, a := range []struct{ name, addr string }{{"gRPC", c.grpcAddr}, {"HTTP", c.httpAddr}} {
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			errs = append(errs, fmt.Sprintf("%s address %q: %v", a.name, a.addr, err))
		}
	}
	for _, bc := range c.capacity {
		if err := bc.cfg.Validate(); err != nil {
			if !bc.all {
				err = fmt.Errorf("bucket %q: %w", bc.bucket, err)
			}
			errs = append(errs, err.Error())
		}
		if !bc.all {
			if err := store.CheckBucketName(bc.bucket); err != nil {
				errs = append(errs, "capacity: "+err.Error())
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("fakes: %s", strings.Join(errs, "; "))
	}
	return nil
}

// WithDataDir keeps the server's store on disk, in the directory dir
// (created if needed), instead of in memory: buckets with their
// attributes, notification configs and IAM policies, every object
// generation with its metadata and content, resumable sessions with the
// bytes they persisted, appendable objects and HMAC keys. A server started
// on the directory of one that stopped, or was killed (kill -9 included),
// finds everything it acknowledged: a write is answered only once it is
// synced to disk. Memory does not grow with the number of objects (their
// metadata and small content live in a Pebble database under dir/db, the
// content of large and appendable objects in files under dir/blobs), and a
// get or a listing page costs the same with 10 million objects as with a
// thousand. Only one server may use a directory at a time.
//
// Without WithDataDir the store is in memory, unless the environment
// variable OBJUP_FAKE_DATA is "1": then every server keeps its store in a
// temporary directory of its own, removed by [Server.Close], so that a
// test suite runs on the store on disk unchanged.
func WithDataDir(dir string) Option {
	return optionFunc(func(c *config) { c.dataDir = dir })
}

// DataEnv is the environment variable that, set to "1", puts the store of
// every server started without [WithDataDir] on disk, in a temporary
// directory (see WithDataDir).
const DataEnv = "OBJUP_FAKE_DATA"

// WithLink puts a simulated network path in front of both of the server's
// ports: every connection sees cfg's round-trip time and bandwidth (see
// package link), so a client on loopback uploads as if from afar. The zero
// Config, the default, is loopback as it is.
func WithLink(cfg link.Config) Option {
	return optionFunc(func(c *config) { c.link = cfg })
}

// WithMaxStreams caps the concurrent streams (calls) of one gRPC connection
// at n, as GCS's front ends do (SETTINGS_MAX_CONCURRENT_STREAMS, commonly
// 100): a client's call beyond it waits for one of the connection's calls
// to end. 0, the default, is gRPC's own limit (no practical cap). A server
// with a cap also counts each connection's calls for [Server.Conns].
func WithMaxStreams(n int) Option {
	return optionFunc(func(c *config) { c.maxStreams = n })
}

// WithCapacity gives every bucket the write capacity cfg (see package
// fakes/capacity): a token bucket of object writes, autoscaling, a limit
// per object name and a share of 503. A write the capacity refuses is
// answered as GCS answers it and stores nothing; see the package
// documentation for what counts as a write. Without WithCapacity or
// [WithBucketCapacity] buckets admit every write, at no cost.
func WithCapacity(cfg capacity.Config) Option {
	return optionFunc(func(c *config) { c.capacity = append(c.capacity, bucketCapacity{all: true, cfg: cfg}) })
}

// WithBucketCapacity gives the bucket its own write capacity, in place of
// the one of [WithCapacity]. Naming a bucket again replaces its Config.
// The bucket need not exist yet.
func WithBucketCapacity(bucket string, cfg capacity.Config) Option {
	return optionFunc(func(c *config) { c.capacity = append(c.capacity, bucketCapacity{bucket: bucket, cfg: cfg}) })
}
