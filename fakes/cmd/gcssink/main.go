// Command gcssink runs the sink (package fakes/sink) as a standalone server: a
// storage v2 gRPC server that answers the write RPCs (WriteObject,
// BidiWriteObject, StartResumableWrite, QueryWriteStatus) with the real
// checks (write offsets, CRC32C per message and per object, finish_write)
// and then discards the content. Benchmarks run it in a process of its own,
// so that what they measure in theirs is the client alone.
//
// Usage:
//
//	gcssink [-grpc 127.0.0.1:9090] [-md5] [-compose] [-zonal-bucket NAME]...
//	        [-rtt 20ms] [-bandwidth 100MB/s] [-max-streams 100]
//	        [-write-rate 1000] [-write-burst N] [-object-rate 1] [-share-503 0.1]
//	        [-autoscale-after 1m] [-autoscale-factor 2] [-autoscale-max 8000]
//
// The address defaults to 127.0.0.1:0 (a free port on loopback); an empty
// host ("-grpc :9090") also means loopback, and only an explicit host such
// as 0.0.0.0 listens elsewhere. Every well-formed bucket exists. -md5 hashes
// every write with MD5, so that an MD5 a client declares only at the end of
// a resumable upload is checked too (without it, the sink checks an MD5 only
// when it is declared before the content, and refuses one declared later).
// -compose keeps each finalized object's name, generation, size and CRC32C
// (no content), so the sink serves ComposeObject and DeleteObject, as
// parallel composite uploads need, and checks generation preconditions.
// Appendable writes (BidiWriteObject with write_object_spec.appendable,
// flushes, state lookups, takeovers by append_object_spec) are served as
// the fake serves them, with the content dropped. -zonal-bucket makes a
// bucket zonal, as fakegcs does: it takes appendable writes only (others
// fail with FAILED_PRECONDITION) and its objects are RAPID; it may be
// repeated or name several buckets separated by commas.
// The write capacity flags (-write-rate and the others) are fakegcs's: they
// give every bucket a write capacity (package fakes/capacity), checked on
// one-shot writes, resumable session starts and, with -compose, composes
// and deletes, so that a benchmark meets the same pushback on either
// server; the counts are printed at exit.
//
// Once it listens, gcssink prints exactly one line on standard output, which
// scripts may parse:
//
//	grpc 127.0.0.1:PORT
//
// It serves until SIGINT or SIGTERM, then shuts down gracefully (calls in
// flight get up to 5 seconds), prints what it received on standard error,
// and exits with status 0. It exits with status 2 on bad flags and 1 if it
// cannot start or stop cleanly.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/capflag"
	"github.com/objup/objup/fakes/link"
	"github.com/objup/objup/fakes/sink"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run serves until ctx ends and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gcssink", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("grpc", sink.DefaultAddr, "`address` of the storage v2 gRPC server")
	md5 := fs.Bool("md5", false, "hash every write with MD5 (checks an MD5 declared at the end; costs 1-2 CPU s/GiB)")
	rtt := fs.Duration("rtt", 0, "simulated round-trip time in front of the port (0: none)")
	bandwidth := fs.String("bandwidth", "0", "simulated bandwidth of each connection and direction, such as 100MB/s (0: unlimited)")
	maxStreams := fs.Int("max-streams", 0, "cap the concurrent streams of one connection at `N`, as GCS front ends do (0: no cap)")
	compose := fs.Bool("compose", false, "keep each object's name, generation, size and CRC32C (no content), to serve ComposeObject and DeleteObject")
	var zonal api.NameList
	fs.Var(&zonal, "zonal-bucket", "make bucket `NAME` zonal: appendable writes only (repeatable, or a comma-separated list)")
	capFlags := capflag.Register(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gcssink: unexpected arguments: %q\n", fs.Args())
		return 2
	}
	bw, err := link.ParseBandwidth(*bandwidth)
	if err != nil {
		fmt.Fprintf(stderr, "gcssink: -bandwidth: %v\n", err)
		return 2
	}
	opts := []sink.Option{sink.WithAddr(*addr), sink.WithLink(link.Config{RTT: *rtt, Bandwidth: bw}), sink.WithMaxStreams(*maxStreams)}
	if *md5 {
		opts = append(opts, sink.WithMD5())
	}
	if *compose {
		opts = append(opts, sink.WithCompose())
	}
	for _, b := range zonal {
		opts = append(opts, sink.WithZonalBucket(b))
	}
	capCfg, capOn, err := capFlags.Config()
	if err != nil {
		fmt.Fprintf(stderr, "gcssink: %v\n", err)
		return 2
	}
	if capOn {
		opts = append(opts, sink.WithCapacity(capCfg))
	}
	k, err := sink.New(opts...)
	if err != nil {
		fmt.Fprintf(stderr, "gcssink: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "grpc %s\n", k.GRPCAddr())
	<-ctx.Done()
	err = k.Close()
	st := k.Stats()
	fmt.Fprintf(stderr, "gcssink: %d objects (%d bytes) finalized; %d write messages, %d content bytes received; %d resumable sessions; %d failed calls\n",
		st.Objects, st.Bytes, st.Messages, st.Received, st.Sessions, st.Failed)
	capflag.Print(stderr, "gcssink: write capacity per bucket and tenant (writes admitted and refused):", k.CapacityStats())
	if err != nil {
		fmt.Fprintf(stderr, "gcssink: %v\n", err)
		return 1
	}
	return 0
}
