package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// sizeUnits are the units parseSize takes, longest first so that "MiB"
// is not read as "B".
var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
	{"B", 1},
}

// parseSize parses a size in bytes: a plain number ("1048576") or a number
// with a unit ("64MiB", "1GiB", "500MB", "1.5GiB", "4k"). Binary units
// (KiB, MiB, GiB, TiB, and K, M, G, T as gsutil reads them) are powers of
// 1024, decimal ones (KB, MB, GB, TB) powers of 1000; the unit's case does
// not matter.
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range sizeUnits {
		if len(t) > len(u.suffix) && strings.EqualFold(t[len(t)-len(u.suffix):], u.suffix) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	if t == "" {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		if n < 0 || (n > 0 && mult > math.MaxInt64/n) {
			return 0, fmt.Errorf("invalid size %q: out of range", s)
		}
		return n * mult, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("invalid size %q: want a number of bytes, or one with a unit such as 64MiB, 1GiB or 500MB", s)
	}
	v := f * float64(mult)
	if v < 0 || v >= math.MaxInt64 {
		return 0, fmt.Errorf("invalid size %q: out of range", s)
	}
	return int64(math.Round(v)), nil
}

// sizeFlag is a flag.Value holding a size.
type sizeFlag int64

// String implements flag.Value.
func (s *sizeFlag) String() string { return strconv.FormatInt(int64(*s), 10) }

// Set implements flag.Value.
func (s *sizeFlag) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	*s = sizeFlag(n)
	return nil
}

// formatBytes writes n bytes in binary units.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), -1
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTP"[i])
}
