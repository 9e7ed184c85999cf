// Package retry is the uploader's one retry engine, and
// the one place of its rules: which failures may be repeated (Rules,
// ShouldRetry), which leave an outcome open (AnswerLost), which are the
// service pushing back for load (IsPushback, IsNamePushback), and the
// state of a failure episode, its attempts, backoff and deadline (Episode).
//
// A failure episode starts with a failed attempt and ends with progress (a
// call succeeds, or the service acknowledges data). Within an episode the
// pauses between attempts grow as an exponential backoff with full jitter
// (gax.Backoff), the attempts may be counted (Limits.MaxAttempts), and the
// episode has a deadline (Limits.Deadline): no retry starts with less than
// MinAttempt of it left, and the last attempt's timeout ends with it.
//
// Engine.Do is the loop: it waits out each pause as the upload's context
// allows, reports each retry to the upload's events (Events), and leaves
// the pause of a retry refused for load to the admission stage when
// Config.Paced says one paces them. The package does not log.
package retry
