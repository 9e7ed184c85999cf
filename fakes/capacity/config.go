package capacity

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Defaults of a [Config] whose fields are zero.
const (
	// DefaultObjectRate is the writes a second one object name takes, as
	// GCS documents ("about one write per second").
	DefaultObjectRate = 1.0
	// DefaultObjectBurst is the writes one object name takes at once.
	DefaultObjectBurst = 2
	// DefaultAutoscaleFactor is how much a saturated bucket's rate grows
	// at each step of autoscaling: GCS's guidance is to double a request
	// rate at most every 20 minutes.
	DefaultAutoscaleFactor = 2.0
)

// Config is the write capacity of one bucket. The zero Config limits
// nothing but each object name, to [DefaultObjectRate]. Fields are read
// once, when a [Limiter] is made.
type Config struct {
	// Rate is the object writes a second the bucket admits, as a token
	// bucket that refills at this rate. 0 means no limit on the bucket
	// (the per-name limit still applies).
	Rate float64
	// Burst is the writes the bucket admits at once when it has been idle:
	// the token bucket's size. 0 means one second's worth, Rate rounded
	// up (at least 1).
	Burst int

	// AutoscaleAfter turns autoscaling on: once the bucket has been
	// saturated (turning writes away without its token bucket refilling
	// completely in between) for this long, its rate and burst grow by
	// AutoscaleFactor, up to AutoscaleMax. 0 is off. Needs a Rate.
	AutoscaleAfter time.Duration
	// AutoscaleFactor is the growth of one autoscaling step, more than 1;
	// 0 means [DefaultAutoscaleFactor].
	AutoscaleFactor float64
	// AutoscaleMax caps the rate autoscaling reaches; 0 means no cap.
	// It must not be below Rate.
	AutoscaleMax float64

	// ObjectRate is the writes a second one object name takes; 0 means
	// [DefaultObjectRate], and a negative rate turns the per-name limit off.
	ObjectRate float64
	// ObjectBurst is the writes one name takes at once; 0 means
	// [DefaultObjectBurst].
	ObjectBurst int

	// Share503 is the share, from 0 to 1, of the bucket's refusals that
	// are answered as [Unavailable] (503) rather than [RateLimited] (429),
	// spread evenly over them.
	Share503 float64
}

// Validate reports every problem of c in one error, or nil.
func (c Config) Validate() error {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	finite := func(name string, v float64) bool {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			bad("%s %v is not a number", name, v)
			return false
		}
		return true
	}
	if finite("rate", c.Rate) && c.Rate < 0 {
		bad("rate %v is negative", c.Rate)
	}
	if c.Burst < 0 {
		bad("burst %d is negative", c.Burst)
	}
	if c.Burst > 0 && c.Rate == 0 {
		bad("burst %d needs a rate", c.Burst)
	}
	if c.AutoscaleAfter < 0 {
		bad("autoscale-after %v is negative", c.AutoscaleAfter)
	}
	if c.AutoscaleAfter > 0 && c.Rate == 0 {
		bad("autoscaling needs a rate to grow")
	}
	if finite("autoscale factor", c.AutoscaleFactor) && c.AutoscaleFactor != 0 && c.AutoscaleFactor <= 1 {
		bad("autoscale factor %v must be more than 1", c.AutoscaleFactor)
	}
	if finite("autoscale max", c.AutoscaleMax) && c.AutoscaleMax != 0 && c.AutoscaleMax < c.Rate {
		bad("autoscale max %v is below the rate %v", c.AutoscaleMax, c.Rate)
	}
	finite("object rate", c.ObjectRate)
	if c.ObjectBurst < 0 {
		bad("object burst %d is negative", c.ObjectBurst)
	}
	if finite("share of 503", c.Share503) && (c.Share503 < 0 || c.Share503 > 1) {
		bad("share of 503 %v is not between 0 and 1", c.Share503)
	}
	if len(errs) > 0 {
		return fmt.Errorf("capacity: %s", strings.Join(errs, "; "))
	}
	return nil
}

// maxPeriod bounds how long a name's state is kept, for a per-name rate
// so low that its token bucket would take longer than this to refill.
const maxPeriod = 24 * time.Hour

// limits is a Config with its defaults filled in.
type limits struct {
	rate, burst     float64 // 0: no bucket limit
	after           time.Duration
	factor, maxRate float64 // maxRate 0: no cap
	objRate         float64 // 0: no per-name limit
	objBurst        float64
	period          time.Duration // how long a name's state matters: objBurst/objRate
	share503        float64
}

func (c Config) limits() limits {
	l := limits{rate: c.Rate, burst: float64(c.Burst), after: c.AutoscaleAfter,
		factor: c.AutoscaleFactor, maxRate: c.AutoscaleMax, objRate: c.ObjectRate,
		objBurst: float64(c.ObjectBurst), share503: c.Share503}
	if l.rate > 0 && l.burst == 0 {
		l.burst = max(1, math.Ceil(l.rate))
	}
	if l.factor == 0 {
		l.factor = DefaultAutoscaleFactor
	}
	switch {
	case l.objRate == 0:
		l.objRate = DefaultObjectRate
	case l.objRate < 0:
		l.objRate = 0
	}
	if l.objBurst == 0 {
		l.objBurst = DefaultObjectBurst
	}
	if l.objRate > 0 {
		secs := min(l.objBurst/l.objRate, maxPeriod.Seconds())
		l.period = max(time.Duration(secs*float64(time.Second)), time.Millisecond)
	}
	return l
}
