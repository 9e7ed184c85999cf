// Package api holds what the fake GCS and the sink both need of the
// storage v2 API: the rules for bucket and object names, the parts of a
// write message and the answers to one, preconditions, ETags, and the
// plumbing of a test server (listen and dial addresses, a self-signed
// certificate, TB).
package api
