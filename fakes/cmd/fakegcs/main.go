// Command fakegcs runs the fake GCS of package fakes as a standalone server:
// fake-gcs-server's JSON/XML API over HTTP and a storage v2 gRPC server on
// the same in-memory store.
//
// Usage:
//
//	fakegcs [-grpc 127.0.0.1:9090] [-http 127.0.0.1:4443] [-bucket NAME]...
//
// Both addresses default to 127.0.0.1:0 (a free port on loopback); an empty
// host ("-grpc :9090") also means loopback, and only an explicit host such as
// 0.0.0.0 listens elsewhere. -bucket creates a bucket and may be repeated.
//
// Once both servers listen, fakegcs prints exactly two lines on standard
// output, which scripts may parse:
//
//	grpc 127.0.0.1:PORT
//	http http://127.0.0.1:PORT
//
// It serves until SIGINT or SIGTERM, then shuts down gracefully (calls in
// flight get up to 5 seconds) and exits with status 0. It exits with status
// 2 on bad flags and 1 if it cannot start or stop cleanly.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/objup/objup/fakes"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// buckets is a repeatable -bucket flag.
type buckets []string

func (b *buckets) String() string     { return strings.Join(*b, ",") }
func (b *buckets) Set(v string) error { *b = append(*b, v); return nil }

// run serves until ctx ends and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fakegcs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	grpcAddr := fs.String("grpc", fakes.DefaultAddr, "`address` of the storage v2 gRPC server")
	httpAddr := fs.String("http", fakes.DefaultAddr, "`address` of the JSON/XML API server")
	var bs buckets
	fs.Var(&bs, "bucket", "create bucket `NAME` (repeatable)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fakegcs: unexpected arguments: %q\n", fs.Args())
		return 2
	}
	opts := []fakes.Option{fakes.WithGRPCAddr(*grpcAddr), fakes.WithHTTPAddr(*httpAddr)}
	for _, b := range bs {
		opts = append(opts, fakes.WithBucket(b))
	}
	srv, err := fakes.New(opts...)
	if err != nil {
		fmt.Fprintf(stderr, "fakegcs: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "grpc %s\nhttp %s\n", srv.GRPCAddr(), srv.HTTPURL())
	<-ctx.Done()
	if err := srv.Close(); err != nil {
		fmt.Fprintf(stderr, "fakegcs: %v\n", err)
		return 1
	}
	return 0
}
