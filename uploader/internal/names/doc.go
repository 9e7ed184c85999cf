// Package names checks bucket and object names against GCS's naming
// rules, so that a name the service would refuse fails before anything is
// sent.
package names
