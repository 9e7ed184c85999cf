package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/objup/objup/header"
)

// Defaults of the flags.
const (
	defaultN           = 10000
	defaultMinSize     = 1 << 10
	defaultMaxSize     = 64 << 10
	defaultConcurrency = 16
	defaultBucket      = "objup-smallobjects"
	defaultPrefix      = "smallobjects/"
	defaultSeed        = 1
	defaultTimeout     = 10 * time.Minute
	// maxSizeLimit keeps a typo from generating gigabytes: this is a
	// small-object example.
	maxSizeLimit = 256 << 20
	// The noisy tenant's defaults and bound.
	defaultNoisyConcurrency = 16
	defaultNoisyBudget      = 64 << 20
	maxNoisySize            = 1 << 30
)

// target says where the objects go.
type target int

const (
	targetFake     target = iota // the embedded fake, started by the program
	targetEmulator               // an external emulator: -endpoint or STORAGE_EMULATOR_HOST_GRPC
	targetGCS                    // real GCS with Application Default Credentials
)

func (t target) String() string {
	switch t {
	case targetFake:
		return "embedded-fake"
	case targetEmulator:
		return "emulator"
	}
	return "gcs"
}

// config is the validated command line.
type config struct {
	n                int
	minSize, maxSize int64
	seed             uint64
	concurrency      int
	dir              string
	bucket           string
	prefix           string
	tenant           string
	tenants          int // -tenants: spread the items over t0..t(tenants-1); 0 when not given
	callerBuffers    bool
	endpoint         string // gRPC host:port of an emulator
	endpointFromEnv  bool   // endpoint came from STORAGE_EMULATOR_HOST_GRPC
	httpEndpoint     string // JSON API base URL for verification
	verify           bool
	quiet            bool
	json             bool
	timeout          time.Duration
	// -noisy-tenant: a second tenant's large uploads alongside the
	// objects, under a pool budget, fair or not.
	noisySize        int64
	noisyConcurrency int
	budget           int64
	fair             bool
	// -write-rate: the embedded fake's write capacity; -admission: the
	// client's admission stage.
	writeRate float64
	admission bool

	target target
}

// errUsage marks a usage error whose message has already been printed (by
// the flag package).
var errUsage = errors.New("usage error")

// sizeValue is a byte count flag that takes a plain number or a number with
// an IEC suffix: 512, 1KiB, 64KiB, 1MiB.
type sizeValue int64

func (s *sizeValue) String() string { return formatIEC(int64(*s)) }

func (s *sizeValue) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	*s = sizeValue(n)
	return nil
}

func parseSize(v string) (int64, error) {
	mult := int64(1)
	num := strings.TrimSpace(v)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(num, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size: give bytes, or a number with KiB, MiB or GiB", v)
	}
	if n > 0 && n > (1<<62)/mult {
		return 0, fmt.Errorf("size %q is too large", v)
	}
	return n * mult, nil
}

// parseFlags parses and validates args. It returns flag.ErrHelp for -h,
// errUsage when the flag package already reported the problem, and any
// other error for a problem still to be reported; all but ErrHelp are usage
// errors (exit status 2).
func parseFlags(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("smallobjects", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := &config{}
	minSize, maxSize := sizeValue(defaultMinSize), sizeValue(defaultMaxSize)
	var buffers string
	fs.IntVar(&cfg.n, "n", defaultN, "number of objects to generate")
	fs.Var(&minSize, "min-size", "smallest generated object (bytes, or with KiB/MiB)")
	fs.Var(&maxSize, "max-size", "largest generated object (bytes, or with KiB/MiB)")
	fs.Uint64Var(&cfg.seed, "seed", defaultSeed, "seed of the generated sizes and contents")
	fs.IntVar(&cfg.concurrency, "concurrency", defaultConcurrency, "objects uploaded at once")
	fs.StringVar(&cfg.dir, "dir", "", "upload the regular files under this directory instead of generated objects")
	fs.StringVar(&cfg.bucket, "bucket", defaultBucket, "bucket; naming one without -endpoint uploads to real GCS")
	fs.StringVar(&cfg.prefix, "prefix", defaultPrefix, "prefix of the object names (default for an emulator or GCS: "+defaultPrefix+"RUN-ID/)")
	fs.StringVar(&cfg.tenant, "tenant", "", "tenant ID sent as "+header.TenantKey+" with every request")
	fs.IntVar(&cfg.tenants, "tenants", 1, "spread the objects over `N` tenants, t0 to tN-1 (Item.Tenant)")
	fs.StringVar(&buffers, "buffers", "pool", "chunk buffers: pool (the client's pool) or caller (the program's own buffers, one per worker)")
	fs.StringVar(&cfg.endpoint, "endpoint", "", "gRPC host:port of an emulator (default $"+"STORAGE_EMULATOR_HOST_GRPC"+")")
	fs.StringVar(&cfg.httpEndpoint, "http-endpoint", "", "JSON API base URL used to verify an emulator's or GCS's objects, e.g. http://127.0.0.1:4443")
	fs.BoolVar(&cfg.verify, "verify", true, "list the uploaded objects and check count, sizes and CRC32C")
	fs.BoolVar(&cfg.quiet, "quiet", false, "no progress output")
	fs.BoolVar(&cfg.json, "json", false, "print the summary as one JSON object")
	fs.DurationVar(&cfg.timeout, "timeout", defaultTimeout, "give up after this long (0: never)")
	var noisy, budget sizeValue
	fs.Var(&noisy, "noisy-tenant", "while the objects go up, tenant \""+noisyTenant+"\" uploads objects of `SIZE` in a loop (abandoned before they finish, so nothing is stored): shows how one tenant's burst affects the others")
	fs.IntVar(&cfg.noisyConcurrency, "noisy-concurrency", defaultNoisyConcurrency, "noisy uploads at once (with -noisy-tenant)")
	fs.Var(&budget, "budget", "byte budget of the client's buffer pool, shared by all tenants (default none; "+formatIEC(defaultNoisyBudget)+" with -noisy-tenant)")
	fs.BoolVar(&cfg.fair, "fair", true, "when the budget is spent, serve waiting uploads tenant by tenant; -fair=false serves them first come, first served")
	fs.Float64Var(&cfg.writeRate, "write-rate", 0, "the embedded fake admits this many object writes a second per bucket and refuses the rest (429), as GCS does (0: no limit)")
	fs.BoolVar(&cfg.admission, "admission", true, "the client's admission stage learns the bucket's rate from its pushback and paces the writes; -admission=false sends every write at once (experimental.WithoutAdmission)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: smallobjects [flags]\n\n"+
			"Uploads many small objects with objup's UploadMany, then verifies them.\n"+
			"Without flags it starts an in-process fake GCS; see the package doc for\n"+
			"emulators and real GCS.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, errUsage
	}
	cfg.noisySize, cfg.budget = int64(noisy), int64(budget)
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q: everything is set with flags", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	cfg.minSize, cfg.maxSize = int64(minSize), int64(maxSize)
	if cfg.noisySize > 0 && !set["budget"] {
		cfg.budget = defaultNoisyBudget
	}

	switch buffers {
	case "pool":
	case "caller":
		cfg.callerBuffers = true
	default:
		return nil, fmt.Errorf("-buffers %q: want pool or caller", buffers)
	}
	switch {
	case cfg.n < 0:
		return nil, fmt.Errorf("-n %d: the number of objects cannot be negative", cfg.n)
	case cfg.concurrency < 1:
		return nil, fmt.Errorf("-concurrency %d: at least one upload must run", cfg.concurrency)
	case cfg.minSize < 0:
		return nil, fmt.Errorf("-min-size %d: sizes cannot be negative", cfg.minSize)
	case cfg.maxSize < cfg.minSize:
		return nil, fmt.Errorf("-min-size %s is larger than -max-size %s", formatIEC(cfg.minSize), formatIEC(cfg.maxSize))
	case cfg.maxSize > maxSizeLimit:
		return nil, fmt.Errorf("-max-size %s: at most %s, this example is for small objects", formatIEC(cfg.maxSize), formatIEC(maxSizeLimit))
	case cfg.writeRate < 0:
		return nil, fmt.Errorf("-write-rate %v: a rate cannot be negative", cfg.writeRate)
	case cfg.timeout < 0:
		return nil, fmt.Errorf("-timeout %v cannot be negative", cfg.timeout)
	case cfg.noisySize > maxNoisySize:
		return nil, fmt.Errorf("-noisy-tenant %s: at most %s", formatIEC(cfg.noisySize), formatIEC(maxNoisySize))
	case cfg.noisyConcurrency < 1:
		return nil, fmt.Errorf("-noisy-concurrency %d: at least one upload must run", cfg.noisyConcurrency)
	case cfg.budget != 0 && cfg.budget < 256<<10:
		return nil, fmt.Errorf("-budget %s: at least one 256KiB buffer", formatIEC(cfg.budget))
	}
	switch {
	case !set["tenants"]:
		cfg.tenants = 0
	case set["tenant"]:
		return nil, fmt.Errorf("-tenant and -tenants exclude each other: give one tenant with -tenant, or spread the objects over N tenants with -tenants")
	case cfg.tenants < 1:
		return nil, fmt.Errorf("-tenants %d: at least one tenant", cfg.tenants)
	}
	if cfg.tenant != "" || set["tenant"] {
		if _, err := header.WithTenant(context.Background(), cfg.tenant); err != nil {
			return nil, fmt.Errorf("-tenant: %v", err)
		}
	}
	if cfg.dir != "" {
		for _, f := range []string{"n", "min-size", "max-size", "seed"} {
			if set[f] {
				return nil, fmt.Errorf("-%s does not apply with -dir: the files are uploaded as they are", f)
			}
		}
		fi, err := os.Stat(cfg.dir)
		switch {
		case err != nil:
			return nil, fmt.Errorf("-dir: %v", err)
		case !fi.IsDir():
			return nil, fmt.Errorf("-dir %s is not a directory", cfg.dir)
		}
	} else if set["dir"] {
		return nil, fmt.Errorf("-dir is empty")
	}

	// Where to upload: an emulator if one is named, else real GCS if a
	// bucket is named, else the embedded fake.
	if cfg.endpoint == "" {
		if env := os.Getenv("STORAGE_EMULATOR_HOST_GRPC"); env != "" {
			cfg.endpoint, cfg.endpointFromEnv = env, true
		}
	}
	switch {
	case cfg.endpoint != "":
		cfg.target = targetEmulator
	case set["bucket"]:
		cfg.target = targetGCS
	default:
		cfg.target = targetFake
	}
	if cfg.target == targetFake && cfg.httpEndpoint != "" {
		return nil, fmt.Errorf("-http-endpoint applies to an emulator (-endpoint) or GCS (-bucket), not to the embedded fake")
	}
	if cfg.httpEndpoint != "" && !strings.HasPrefix(cfg.httpEndpoint, "http://") && !strings.HasPrefix(cfg.httpEndpoint, "https://") {
		return nil, fmt.Errorf("-http-endpoint %q: want a URL such as http://127.0.0.1:4443", cfg.httpEndpoint)
	}
	cfg.httpEndpoint = strings.TrimSuffix(cfg.httpEndpoint, "/")
	if cfg.target != targetFake && !set["prefix"] {
		// A fresh prefix per run, so that verification sees only this
		// run's objects in a bucket that outlives it.
		cfg.prefix = defaultPrefix + time.Now().UTC().Format("20060102T150405.000Z") + "/"
	}
	return cfg, nil
}
