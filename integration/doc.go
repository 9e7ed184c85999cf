// Package integration holds end-to-end tests: the official Cloud Storage Go
// client (cloud.google.com/go/storage), over gRPC and over the JSON/XML API,
// as an independent peer of the fake in package fakes, and later objup's own
// uploader side by side with it. The package has tests only.
package integration
