// Package admit is the admission stage of a client's object writes, one
// per bucket: it learns from the service's answers the rate at which the
// bucket admits writes, and makes writes wait for their turn instead of
// adding to the load when the service pushes back.
//
// A bucket's stage stays open, at the cost of an atomic load per write and
// a count per success, until the service first pushes back (429,
// RESOURCE_EXHAUSTED, 503). It then admits writes at a learned rate: at
// the first pushback, Beta of the rate at which its writes were answered,
// doubled every CutEvery until the next pushback; at every later one, Beta
// of the rate the service accepted in the last second (this client's share
// of the bucket); in between grown along a cubic curve while writes succeed
// (CUBIC, as TCP and the AWS SDK for Go's adaptive retry mode do), never
// above twice the rate of answers. Several processes sharing a bucket each settle at a share of
// it, without talking to each other, since each cuts what it achieved.
//
// Writes wait as their context allows and never fail for admission. The
// waiting writes are served tenant by tenant in turn (a tenant of weight w
// gets w writes a turn), and within a tenant oldest first (by the priority the caller gives, the upload's start), so
// an upload that lost a few rounds does not starve in backoff while newer
// ones pass. A write that pushback rejected is retried through the same
// stage, so retries cannot multiply the load.
package admit
