// Package mono is the uploader's clock: a point in time as the monotonic
// time since the process started, in 8 bytes where a time.Time takes 24, so
// that the structs that hold one stay in a smaller size class.
package mono
