package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/api/option"

	"github.com/objup/objup/cmd/objup/tree"
	"github.com/objup/objup/header"
	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader"
)

// cpConfig is what the cp command line says.
type cpConfig struct {
	recursive       bool
	journal         string
	noJournal       bool
	http            bool
	tenant          string
	threshold       sizeFlag
	partSize        sizeFlag
	method          string
	memory          sizeFlag
	concurrency     int
	checksum        bool
	noClobber       bool
	continueOnError bool
	follow          bool
	excludes        []string
	progressEvery   time.Duration

	src, dst string
}

// stringsFlag is a repeatable string flag.
type stringsFlag []string

func (s *stringsFlag) String() string     { return strings.Join(*s, ",") }
func (s *stringsFlag) Set(v string) error { *s = append(*s, v); return nil }

// parseCp parses cp's arguments; flags may come before, between and after
// the two operands, and "--" ends the flags.
func parseCp(args []string, stderr io.Writer) (*cpConfig, error) {
	cfg := &cpConfig{}
	fs := flag.NewFlagSet("objup cp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage+"\nflags:\n")
		fs.PrintDefaults()
	}
	fs.BoolVar(&cfg.recursive, "r", false, "upload the files under `DIR` (as -recursive)")
	fs.BoolVar(&cfg.recursive, "recursive", false, "upload the files under DIR")
	fs.StringVar(&cfg.journal, "journal", "", "`DIR` of the resume handles and manifests (default: the user's cache directory + /objup/journal)")
	fs.BoolVar(&cfg.noJournal, "no-journal", false, "keep no journal and no manifest: a run that is stopped leaves nothing to resume")
	fs.BoolVar(&cfg.http, "http", false, "use the JSON API (STORAGE_EMULATOR_HOST) instead of gRPC (STORAGE_EMULATOR_HOST_GRPC)")
	fs.StringVar(&cfg.tenant, "tenant", "", "tenant `ID` sent in the x-scope-orgid header")
	fs.Var(&cfg.threshold, "parallel-threshold", "parallel uploads for files of at least `SIZE` bytes (64MiB, 1GiB, 500MB; 0: never)")
	fs.Var(&cfg.partSize, "part-size", "part `SIZE` of parallel uploads (default 6MiB)")
	fs.StringVar(&cfg.method, "parallel-method", "", "how a parallel upload's parts become the object: `multipart` (the XML API's multipart upload, the default) or compose (temporary objects, composed)")
	fs.Var(&cfg.memory, "memory", "ceiling on the upload buffers' memory, `SIZE` bytes (0: none)")
	fs.IntVar(&cfg.concurrency, "concurrency", tree.DefaultConcurrency, "files uploaded at once")
	fs.BoolVar(&cfg.checksum, "checksum", false, "tell changed files by their CRC32C instead of size and modification time")
	fs.BoolVar(&cfg.noClobber, "n", false, "leave existing objects as they are (as -no-clobber)")
	fs.BoolVar(&cfg.noClobber, "no-clobber", false, "leave existing objects as they are")
	fs.BoolVar(&cfg.continueOnError, "continue-on-error", false, "go on after a file failed (default: stop at the first)")
	fs.BoolVar(&cfg.follow, "L", false, "upload what symbolic links point to (as -follow-symlinks)")
	fs.BoolVar(&cfg.follow, "follow-symlinks", false, "upload what symbolic links point to")
	fs.Var((*stringsFlag)(&cfg.excludes), "exclude", "leave out files and directories whose relative path matches `PATTERN` (path.Match; repeatable)")
	fs.DurationVar(&cfg.progressEvery, "progress-every", 2*time.Second, "interval of the progress lines when standard error is not a terminal (0: none)")

	var operands []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			operands = append(operands, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		operands = append(operands, rest[0])
		args = rest[1:]
	}
	if len(operands) != 2 {
		fs.Usage()
		return nil, fmt.Errorf("cp takes a source and a destination, got %d operands", len(operands))
	}
	cfg.src, cfg.dst = operands[0], operands[1]
	if cfg.concurrency < 1 {
		return nil, fmt.Errorf("--concurrency %d: want at least 1", cfg.concurrency)
	}
	if _, ok := parallelMethods[cfg.method]; !ok {
		return nil, fmt.Errorf("--parallel-method %q: want multipart or compose", cfg.method)
	}
	for _, p := range cfg.excludes {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("--exclude %q: %w", p, err)
		}
	}
	return cfg, nil
}

// parseURL splits gs://BUCKET/PATH.
func parseURL(s string) (bucket, name string, err error) {
	rest, ok := strings.CutPrefix(s, "gs://")
	if !ok {
		return "", "", fmt.Errorf("destination %q: want gs://BUCKET/PATH", s)
	}
	bucket, name, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("destination %q has no bucket", s)
	}
	return bucket, name, nil
}

// defaultJournal is where the journal lives unless --journal says.
func defaultJournal() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the journal (give --journal): %w", err)
	}
	return filepath.Join(dir, "objup", "journal"), nil
}

// cp runs the cp command.
func cp(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseCp(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "objup: %v\n", err)
		return exitUsage
	}
	bucket, name, err := parseURL(cfg.dst)
	if err != nil {
		fmt.Fprintf(stderr, "objup: %v\n", err)
		return exitUsage
	}
	fi, err := os.Stat(cfg.src)
	if err != nil {
		fmt.Fprintf(stderr, "objup: %v\n", err)
		return exitUsage
	}
	dirSrc := fi.IsDir()
	if dirSrc && !cfg.recursive {
		fmt.Fprintf(stderr, "objup: %s is a directory: give -r to upload the files under it\n", cfg.src)
		return exitUsage
	}
	if !dirSrc && (name == "" || strings.HasSuffix(name, "/")) {
		name += filepath.Base(cfg.src)
	}

	if cfg.noJournal {
		cfg.journal = ""
	} else if cfg.journal == "" {
		if cfg.journal, err = defaultJournal(); err != nil {
			fmt.Fprintf(stderr, "objup: %v\n", err)
			return exitUsage
		}
	}
	if cfg.tenant != "" {
		if ctx, err = header.WithTenant(ctx, cfg.tenant); err != nil {
			fmt.Fprintf(stderr, "objup: --tenant: %v\n", err)
			return exitUsage
		}
	}
	var copts []option.ClientOption
	if cfg.http {
		copts = append(copts, uploader.WithHTTP())
	}
	if cfg.memory > 0 {
		p, err := pool.New(pool.WithBudget(int64(cfg.memory)))
		if err != nil {
			fmt.Fprintf(stderr, "objup: --memory: %v\n", err)
			return exitUsage
		}
		copts = append(copts, uploader.WithPool(p))
	}
	c, err := uploader.NewClient(ctx, copts...)
	if err != nil {
		fmt.Fprintf(stderr, "objup: %v\n", err)
		return exitFailed
	}
	defer c.Close()

	bar := isTerminal(stderr)
	prog := newProgress(stderr, bar, cfg.progressEvery)
	opts := tree.Options{
		JournalDir:        cfg.journal,
		FollowSymlinks:    cfg.follow,
		Concurrency:       cfg.concurrency,
		ParallelThreshold: int64(cfg.threshold),
		Parallel:          uploader.ParallelUpload{PartSize: int64(cfg.partSize), Method: parallelMethods[cfg.method]},
		SkipExisting:      cfg.noClobber,
		ContinueOnError:   cfg.continueOnError,
		OnEvent:           prog.event,
	}
	if cfg.checksum {
		opts.Compare = tree.CompareChecksum
	}
	if len(cfg.excludes) > 0 {
		opts.Filter = func(rel string, _ bool) bool {
			for _, p := range cfg.excludes {
				if ok, _ := path.Match(p, rel); ok {
					return false
				}
				if ok, _ := path.Match(p, path.Base(rel)); ok {
					return false
				}
			}
			return true
		}
	}
	var sum tree.Summary
	if dirSrc {
		sum, err = tree.Upload(ctx, c, cfg.src, bucket, name, opts)
	} else {
		sum, err = tree.UploadFile(ctx, c, cfg.src, bucket, name, opts)
	}
	prog.close()
	report(stdout, stderr, &sum)
	switch {
	case err == nil && sum.OK():
		return exitOK
	case err != nil && sum.Files == 0 && len(sum.Failed) == 0:
		fmt.Fprintf(stderr, "objup: %v\n", err)
		return exitFailed
	case ctx.Err() != nil:
		fmt.Fprintf(stderr, "objup: interrupted: run the same command again to finish\n")
		return exitFailed
	case err != nil:
		fmt.Fprintf(stderr, "objup: %v\n", err)
	}
	return exitFailed
}

// report writes the summary line, and the failed files.
func report(stdout, stderr io.Writer, s *tree.Summary) {
	fmt.Fprintf(stdout, "objup: %d files, %s: %d uploaded (%d resumed), %d found stored, %d unchanged, %d existing, %d failed, %d not started; %s sent in %s, %.1f objects/s\n",
		s.Files, formatBytes(s.Bytes), s.Uploaded, s.Resumed, s.Found, s.Unchanged, s.Existing, len(s.Failed), s.NotStarted,
		formatBytes(s.UploadedBytes), s.Elapsed.Round(time.Millisecond), s.ObjectsPerSecond())
	const most = 20
	for i, f := range s.Failed {
		if i == most {
			fmt.Fprintf(stderr, "objup: ... and %d more failed files\n", len(s.Failed)-most)
			break
		}
		fmt.Fprintf(stderr, "objup: failed: %s -> gs://%s: %v\n", f.Path, f.Object, f.Err)
	}
}

// parallelMethods are the values of --parallel-method ("": the SDK's
// default).
var parallelMethods = map[string]uploader.ParallelMethod{"": 0, "multipart": uploader.ViaMultipart, "compose": uploader.ViaCompose}
