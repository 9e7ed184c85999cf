package store

// Conditions are a request's generation and metageneration preconditions.
type Conditions struct {
	GenMatch, GenNotMatch, MetaMatch, MetaNotMatch *int64
	// NoOverwrite refuses, once the other conditions held, a write that
	// would replace a live object: its caller lacks storage.objects.delete,
	// which GCS requires to overwrite (KindForbidden, with GCS's message).
	NoOverwrite bool
}

// Check evaluates the conditions against o, the live object or the
// generation a request names (nil: none). As GCS documents, a *NotMatch
// condition fails when there is no object.
func (c *Conditions) Check(o *Object) error {
	if o == nil {
		return c.CheckVersion(false, 0, 0)
	}
	return c.CheckVersion(true, o.generation, o.metageneration)
}

// CheckVersion is Check against an object that exists or not, with the
// generation and metageneration given.
func (c *Conditions) CheckVersion(exists bool, gen, meta int64) error {
	if c == nil {
		return nil
	}
	switch {
	case c.GenMatch != nil && *c.GenMatch != gen:
		if *c.GenMatch == 0 {
			return NewPrecondition(false, "if_generation_match=0 but the object exists (generation %d)", gen)
		}
		if !exists {
			return NewPrecondition(false, "if_generation_match=%d but the object does not exist", *c.GenMatch)
		}
		return NewPrecondition(false, "if_generation_match=%d, live generation is %d", *c.GenMatch, gen)
	case c.MetaMatch != nil && (!exists || *c.MetaMatch != meta):
		if !exists {
			return NewPrecondition(false, "if_metageneration_match=%d but the object does not exist", *c.MetaMatch)
		}
		return NewPrecondition(false, "if_metageneration_match=%d, metageneration is %d", *c.MetaMatch, meta)
	case c.GenNotMatch != nil && (!exists || *c.GenNotMatch == gen):
		if !exists {
			return NewPrecondition(true, "if_generation_not_match=%d but the object does not exist", *c.GenNotMatch)
		}
		return NewPrecondition(true, "if_generation_not_match=%d is the generation", gen)
	case c.MetaNotMatch != nil && (!exists || *c.MetaNotMatch == meta):
		if !exists {
			return NewPrecondition(true, "if_metageneration_not_match=%d but the object does not exist", *c.MetaNotMatch)
		}
		return NewPrecondition(true, "if_metageneration_not_match=%d is the metageneration", meta)
	case c.NoOverwrite && exists:
		return ErrPermission("storage.objects.delete", "object")
	}
	return nil
}

// ErrPermission is GCS's refusal of a request whose caller lacks
// permission perm on a resource of the kind ("object" or "bucket"): HTTP
// 403 with reason "forbidden", or codes.PermissionDenied.
func ErrPermission(perm, resource string) *Error {
	return Errorf(KindForbidden, "Caller does not have %s access to the Google Cloud Storage %s. Permission '%s' denied on resource (or it may not exist).", perm, resource, perm)
}
