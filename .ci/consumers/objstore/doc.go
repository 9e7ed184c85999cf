// Package objstore uploads through objup's thanos-io/objstore adapter to
// objup's fake.
package objstore
