package retrytest

import (
	"github.com/objup/objup/fakes/internal/store"
)

// The JSON API method names a retry test may name, and the instructions
// the fake carries out on each over each transport.

// retryMethod says over which transports the fake serves a JSON API method
// name of the retry test API, and which instruction kinds apply to it.
type retryMethod struct {
	http, grpc bool
	insert     bool // uploads: the after-bytes and stall instructions apply
	read       bool // reads: broken streams apply over gRPC
}

// newMethods returns the method names the retry test API knows: those of
// the testbench. The fake serves all of them over HTTP but
// storage.objects.restore, and over gRPC those of grpc.
func newMethods(grpc []string) map[string]retryMethod {
	m := map[string]retryMethod{
		"storage.objects.delete":  {http: true, grpc: true},
		"storage.objects.get":     {http: true, grpc: true, read: true},
		"storage.objects.insert":  {http: true, grpc: true, insert: true},
		"storage.objects.list":    {http: true, grpc: true},
		"storage.objects.patch":   {http: true, grpc: true},
		"storage.objects.compose": {http: true, grpc: true},
		"storage.objects.restore": {},
	}
	for _, name := range []string{
		"storage.buckets.delete", "storage.buckets.get", "storage.buckets.insert", "storage.buckets.list",
		"storage.buckets.patch", "storage.buckets.update", "storage.buckets.getIamPolicy",
		"storage.buckets.setIamPolicy", "storage.buckets.testIamPermissions",
		"storage.buckets.lockRetentionPolicy",
		"storage.objects.update", "storage.objects.copy", "storage.objects.rewrite",
		"storage.notifications.list", "storage.notifications.insert", "storage.notifications.get",
		"storage.notifications.delete",
		"storage.hmacKey.create", "storage.hmacKey.delete", "storage.hmacKey.get", "storage.hmacKey.list",
		"storage.hmacKey.update",
		"storage.serviceaccount.get",
	} {
		m[name] = retryMethod{http: true}
	}
	for _, res := range []string{"bucket_acl", "default_object_acl", "object_acl"} {
		for _, verb := range []string{"list", "insert", "get", "update", "patch", "delete"} {
			m["storage."+res+"."+verb] = retryMethod{http: true}
		}
	}
	for _, name := range grpc {
		rm := m[name]
		rm.grpc = true
		m[name] = rm
	}
	return m
}

// checkRetryMethod reports whether the fake serves method over transport:
// an unknown method is invalid, one the fake does not serve unimplemented,
// with a message that names it.
func (r *Tests) checkRetryMethod(name, transport string) error {
	m, ok := r.methods[name]
	switch {
	case !ok:
		return store.Errorf(store.KindInvalid, "fakes: the requested method %q for fault injection is not one the retry test API knows", name)
	case transport == transportHTTP && !m.http, transport == transportGRPC && !m.grpc:
		return store.Errorf(store.KindUnimplemented, "fakes: retry test: method %s is not implemented by the fake over %s", name, transport)
	}
	return nil
}

// checkInstruction reports whether the fake can carry out instruction s,
// parsed as in, on method over transport.
func (r *Tests) checkInstruction(name, transport, s string, in instruction) error {
	m := r.methods[name]
	unsupported := func(why string) error {
		return store.Errorf(store.KindUnimplemented, "fakes: retry test instruction %q on %s over %s is not implemented by the fake: %s", s, name, transport, why)
	}
	switch in.kind {
	case instrStatus:
		if _, ok := grpcCode(in.status); transport == transportGRPC && !ok {
			return store.Errorf(store.KindInvalid, "fakes: retry test instruction %q: status %d has no gRPC equivalent", s, in.status)
		}
	case instrStatusAfter:
		if !m.insert {
			return unsupported("it applies to uploads (storage.objects.insert)")
		}
		if _, ok := grpcCode(in.status); transport == transportGRPC && !ok {
			return store.Errorf(store.KindInvalid, "fakes: retry test instruction %q: status %d has no gRPC equivalent", s, in.status)
		}
	case instrBroken:
		if transport == transportGRPC && !m.read {
			return unsupported("over gRPC it applies to reads (storage.objects.get)")
		}
	case instrStall:
		if transport == transportGRPC {
			return unsupported("stalls apply over HTTP")
		}
	case instrRedirect, instrRedirectHandle, instrExpectToken:
		if transport != transportGRPC || name != "storage.objects.insert" {
			return unsupported("redirects apply to BidiWriteObject (storage.objects.insert) over gRPC")
		}
	}
	return nil
}
