package store

import "github.com/objup/objup/internal/wire"

// Extra holds the attributes few objects have, so that an object
// without them costs one nil pointer: the ACL, the KMS key, holds, retention
// and contexts. It is never modified once stored.
type Extra struct {
	KMSKey         string
	ACL            []ACLEntry
	TemporaryHold  bool
	EventBasedHold *bool
	RetentionMode  wire.Object_Retention_Mode
	RetainUntil    int64 // Unix microseconds
	Contexts       map[string]string
	Components     int64 // a composed object's component count, set by Compose
}

// ACLEntry is one entry of an object's ACL: an entity and its role.
type ACLEntry struct{ Entity, Role string }
