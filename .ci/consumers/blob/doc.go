// Package blob uploads through objup's Go CDK driver (objup://) to objup's
// fake.
package blob
