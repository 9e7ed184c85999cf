// Package fake uploads through objup's SDK to objup's fake: a service's
// test that takes the fake as a test dependency.
package fake
