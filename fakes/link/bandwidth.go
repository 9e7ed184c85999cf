package link

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseBandwidth reads a bandwidth as the fake's commands take it: a
// number of bytes per second with a unit, B/s, KB/s, MB/s, GB/s (powers of
// 1000) or KiB/s, MiB/s, GiB/s (powers of 1024), such as "100MB/s" or
// "1.5 GiB/s". "0", "" and "unlimited" are unlimited (0).
func ParseBandwidth(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "0" || s == "" || s == "unlimited" {
		return 0, nil
	}
	units := []struct {
		suffix string
		mult   float64
	}{
		{"GiB/s", 1 << 30}, {"MiB/s", 1 << 20}, {"KiB/s", 1 << 10},
		{"GB/s", 1e9}, {"MB/s", 1e6}, {"KB/s", 1e3}, {"B/s", 1},
	}
	for _, u := range units {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || !(f >= 0) || f*u.mult >= 1<<62 {
				break
			}
			return int64(f * u.mult), nil
		}
	}
	return 0, fmt.Errorf("bandwidth %q: want a number with B/s, KB/s, MB/s, GB/s, KiB/s, MiB/s or GiB/s, such as 100MB/s", s)
}

// FormatBandwidth writes b bytes per second in MB/s (or KB/s below 1 MB/s),
// in a form ParseBandwidth reads back; 0 (or less) is "unlimited".
func FormatBandwidth(b int64) string {
	switch {
	case b <= 0:
		return "unlimited"
	case b < 1e6:
		return strconv.FormatFloat(float64(b)/1e3, 'f', -1, 64) + "KB/s"
	}
	return strconv.FormatFloat(float64(b)/1e6, 'f', -1, 64) + "MB/s"
}
