// Package integration holds end-to-end tests: the official Cloud Storage Go
// client (cloud.google.com/go/storage), over gRPC and over the JSON/XML API,
// as an independent peer of the fake in package fakes, and objup's own
// uploader side by side with it. The tests of the SDK that need the
// official client or fake-gcs-server live here (sdk_test.go, and the wire
// compatibility test in integration/wire), so that the SDK's module does
// not require them. The package has tests only; it is a module of its own.
package integration
