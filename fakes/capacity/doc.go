// Package capacity models the write capacity of GCS buckets: how many object
// writes a bucket admits per second, how that grows under sustained load,
// and how often one object name may be written. It is pure logic, with no
// server in it: the fake (fakes.WithCapacity) and the sink
// (sink.WithCapacity) ask a [Limiter] about each write and answer what it
// decides as GCS answers.
//
// # What GCS does, and what each knob models
//
// A new bucket takes about 1,000 object writes per second; beyond that the
// service answers HTTP 429 (reason rateLimitExceeded) or gRPC
// RESOURCE_EXHAUSTED, and sometimes 503. GCS redistributes a bucket's load
// as it grows, over minutes, so a bucket kept busy gets more capacity; and
// it limits writes to one object name to about one a second. A [Config]
// models each of these:
//
//   - Rate and Burst: a token bucket of object writes per bucket. It holds
//     up to Burst writes (one second's worth by default) and refills at Rate
//     writes a second; a write takes one token, and a write that finds none
//     is turned away ([RateLimited]).
//   - AutoscaleAfter, AutoscaleFactor and AutoscaleMax: a bucket that has
//     been saturated (turning writes away, without its token bucket ever
//     refilling completely in between) for AutoscaleAfter grows its rate
//     (and its burst) by AutoscaleFactor, up to AutoscaleMax; then it must be
//     saturated for another AutoscaleAfter to grow again. Capacity never
//     shrinks. GCS takes minutes; tests take milliseconds.
//   - ObjectRate and ObjectBurst: a token bucket per object name, by default
//     one write a second with a burst of two (so a write and its retry, or
//     a create and a metadata update, pass). A write over it is turned away
//     with [ObjectRateLimited], which GCS words differently, so that a
//     client can tell a hot name from a full bucket. It takes no token of
//     the bucket's.
//   - Share503: the share of the bucket's refusals answered as
//     [Unavailable] (503, UNAVAILABLE) rather than 429, spread evenly:
//     with 0.25, every fourth refusal. The per-name limit always answers
//     429.
//
// What counts as one write is the caller's to decide (the fake: a one-shot
// upload, the start of a resumable session, a compose, a delete, a
// metadata update, a copy or rewrite; not the later requests of a session,
// nor reads).
//
// # Counts
//
// [Limiter.Stats] counts, per bucket and per tenant, the writes admitted
// and those turned away by each limit, and reports each bucket's rate as
// autoscaling left it.
//
// # Cost
//
// A Limiter starts no goroutine and keeps no timer: time moves when a
// write asks (the clock is [WithClock]'s, time.Now by default). A decision
// is a lock-free look-up of the bucket's state, then one short critical
// section under the bucket's own mutex: the token arithmetic, a map look-up
// and store of the object name, and a counter increment, with no allocation
// once the bucket's maps have grown to their working size. Buckets do not
// contend with each other. The per-name state is bounded: a name is kept
// only until its token bucket would be full again (ObjectBurst/ObjectRate,
// two seconds by default), in two generations of maps swapped each such
// period, so a bucket keeps at most the names admitted in the last two
// periods. A caller with no Limiter (capacity off) pays nothing.
package capacity
