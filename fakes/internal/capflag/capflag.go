// Package capflag holds the command-line flags of a bucket's write capacity
// (package fakes/capacity) and the table of its counts, which fakegcs and
// gcssink share.
package capflag

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/objup/objup/fakes/capacity"
)

// Flags are the capacity flags registered on a FlagSet.
type Flags struct {
	fs  *flag.FlagSet
	cfg capacity.Config
}

// Register defines the capacity flags on fs: -write-rate, -write-burst,
// -object-rate, -autoscale-after, -autoscale-factor, -autoscale-max and
// -share-503.
func Register(fs *flag.FlagSet) *Flags {
	f := &Flags{fs: fs}
	c := &f.cfg
	fs.Float64Var(&c.Rate, "write-rate", 0, "object writes a second each bucket admits, as GCS's write capacity (0: no capacity)")
	fs.IntVar(&c.Burst, "write-burst", 0, "object writes a bucket admits at once (0: a second's worth of -write-rate)")
	fs.Float64Var(&c.ObjectRate, "object-rate", 0, "writes a second one object name admits, once a capacity is on (0: 1, as GCS; negative: no per-name limit)")
	fs.DurationVar(&c.AutoscaleAfter, "autoscale-after", 0, "grow a bucket's rate once it has been saturated this long (0: no autoscaling)")
	fs.Float64Var(&c.AutoscaleFactor, "autoscale-factor", 0, "growth of a bucket's rate at each autoscaling step (0: 2)")
	fs.Float64Var(&c.AutoscaleMax, "autoscale-max", 0, "the rate autoscaling stops at (0: no cap)")
	fs.Float64Var(&c.Share503, "share-503", 0, "share, 0 to 1, of a bucket's refusals answered 503 rather than 429")
	return f
}

// Config returns the capacity the flags ask for, once fs was parsed, and
// whether they ask for one: -write-rate or a positive -object-rate turns
// it on. The other flags without either, and a Config that does not
// validate, are errors.
func (f *Flags) Config() (cfg capacity.Config, on bool, err error) {
	on = f.cfg.Rate != 0 || f.cfg.ObjectRate > 0
	if !on {
		var set []string
		f.fs.Visit(func(fl *flag.Flag) {
			switch fl.Name {
			case "write-burst", "autoscale-after", "autoscale-factor", "autoscale-max", "share-503":
				set = append(set, "-"+fl.Name)
			}
		})
		if len(set) > 0 {
			return capacity.Config{}, false, fmt.Errorf("%s need -write-rate or -object-rate", strings.Join(set, ", "))
		}
		return capacity.Config{}, false, nil
	}
	if err := f.cfg.Validate(); err != nil {
		return capacity.Config{}, false, err
	}
	return f.cfg, true, nil
}

// Print writes the counts of stats as a table, one row per bucket (all
// tenants) and one per tenant of it, headed by title. It writes nothing
// for no stats.
func Print(w io.Writer, title string, stats []capacity.BucketStats) {
	if len(stats) == 0 {
		return
	}
	fmt.Fprintln(w, title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "bucket\ttenant\trate/s\tadmitted\t429\t503\tname 429\t")
	row := func(bucket, tenant, rate string, c capacity.Counts) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t\n", bucket, tenant, rate, c.Admitted, c.RateLimited, c.Unavailable, c.ObjectRateLimited)
	}
	for _, b := range stats {
		rate := "-"
		if b.Rate > 0 {
			rate = fmt.Sprintf("%g", b.Rate)
		}
		row(b.Bucket, "(all)", rate, b.Counts)
		for _, t := range b.Tenants {
			name := t.Tenant
			if name == "" {
				name = "(none)"
			}
			row("", name, "", t.Counts)
		}
	}
	tw.Flush()
}
