// Command objup uploads files and directory trees to Google Cloud Storage
// with the objup SDK, and finishes the work after it was killed: run the
// same command again.
//
// Usage:
//
//	objup cp [flags] FILE gs://BUCKET/NAME
//	objup cp [flags] FILE gs://BUCKET[/PREFIX/]
//	objup cp -r [flags] DIR gs://BUCKET[/PREFIX]
//
// cp -r names each object PREFIX/ + the file's path relative to DIR, as
// `gcloud storage rsync -r` does. cp FILE to a name that is empty or ends
// in "/" appends the file's base name.
//
// Flags may come before or after the arguments:
//
//	-r, --recursive          upload the files under DIR
//	--journal DIR            where resume handles and manifests live
//	                         (default: the user's cache directory + /objup/journal)
//	--no-journal             keep no journal and no manifest (nothing to resume)
//	--http                   use the JSON API (STORAGE_EMULATOR_HOST points it
//	                         at an emulator) instead of gRPC
//	                         (STORAGE_EMULATOR_HOST_GRPC)
//	--tenant ID              send the tenant header x-scope-orgid: ID
//	--parallel-threshold SIZE  parallel uploads for files of at least SIZE
//	                         (1048576, 64MiB, 1GiB, 500MB); 0: never
//	--part-size SIZE         the parts' size of a parallel upload
//	--parallel-method M      multipart (the XML API's multipart upload, the
//	                         default) or compose (temporary objects)
//	--concurrency N          files uploaded at once (default 32)
//	--memory SIZE            ceiling on the upload buffers' memory (default:
//	                         none)
//	--checksum               tell changed files by CRC32C, not size and mtime
//	-n, --no-clobber         leave existing objects as they are
//	--continue-on-error      go on after a failed file (default: stop)
//	-L, --follow-symlinks    upload what symbolic links point to
//	--exclude PATTERN        leave out files and directories whose relative
//	                         path matches PATTERN (path.Match; repeatable)
//	--progress-every D       interval of the progress lines when stderr is
//	                         not a terminal (default 2s; 0: none)
//
// A progress bar shows on a terminal, plain lines every 2 s otherwise, and
// a last line sums up: files, bytes, objects/s, failed. The exit status is
// 0 when every file is stored exactly (or skipped on purpose), 1 when a
// file failed, 2 for a usage error, 130 when interrupted (SIGINT or
// SIGTERM: the command exits at once, as if killed, leaving its uploads
// to the next run of the same command, which resumes them).
//
// See README.md for the journal and resuming.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit statuses.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
	// exitInterrupted is 128 + SIGINT, as shells report it.
	exitInterrupted = 130
)

func main() {
	// An interrupt ends the process at once, as a kill would: the journal
	// and the manifest hold what the next run needs to resume, while
	// cancelling the uploads would cancel their sessions, whose bytes the
	// next run would send again.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		fmt.Fprintf(os.Stderr, "\nobjup: %v: stopped; run the same command again to finish\n", s)
		os.Exit(exitInterrupted)
	}()
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// usage is the short help.
const usage = `usage:
  objup cp [flags] FILE gs://BUCKET/NAME
  objup cp -r [flags] DIR gs://BUCKET[/PREFIX]
run "objup cp -h" for the flags
`

// run runs the command line args and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "cp":
		return cp(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "objup: unknown command %q\n%s", args[0], usage)
	return exitUsage
}
