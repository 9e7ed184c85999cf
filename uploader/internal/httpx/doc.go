// Package httpx is the transport of uploads over the JSON API: a
// multipart objects.insert for a one-shot write, and resumable sessions
// (a start, PUTs of the data, status queries, a DELETE that cancels). Its
// one job is to carry one attempt of each call and report what came back
// in storage v2 terms (package xfer's Transport and Stream); it knows
// nothing of the upload above it.
package httpx
