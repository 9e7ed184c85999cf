// Package uploadertest holds the black-box tests of package uploader that
// need the fake (package fakes): the uploads, faults, retries and parallel
// uploads against fakes.Server, and the runnable versions of uploader's
// examples (Example_clientUpload and the others print what the fake
// stored). They live in the integration module so that the SDK's module
// requires nothing of the fake, whose store on disk brings Pebble; package
// uploader keeps its own examples, which compile but dial the real service.
// The package has tests only.
package uploadertest
