package uploader

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/pool"
	"github.com/objup/objup/uploader/internal/knob"
	"github.com/objup/objup/uploader/internal/mode"
)

// WriterOption configures one Writer (NewWriter, Upload, Item.Options).
// NewWriter applies the options in order and then validates them once: an
// invalid value is an InvalidArgument error and nothing is sent.
type WriterOption interface {
	applyWriter(*writerConfig)
}

type writerOptionFunc func(*writerConfig)

func (f writerOptionFunc) applyWriter(c *writerConfig) { f(c) }

// knobOption is a WriterOption of package experimental.
type knobOption func(*knob.Writer)

func (f knobOption) applyWriter(c *writerConfig) { f(&c.knob) }

func init() {
	knob.NewWriterOption = func(set func(*knob.Writer)) any { return knobOption(set) }
	knob.Allocator = func(c any) pool.Allocator { return c.(*Client).alloc }
}

// writerConfig is what the options set. The object's attributes and the
// preconditions go into the request, where the v2 API puts them, once
// validate checked them: spec is the Writer's WriteObjectSpec, and obj its
// resource.
type writerConfig struct {
	spec     *wire.WriteObjectSpec
	obj      *wire.Object
	parallel *mode.Parallel // WithParallelUpload: its settings
	// cps is what the caller is told and kept of the upload's progress:
	// made by WithProgress or WithJournal, which it holds, or by the
	// first mode that can be continued (Writer.Handle); nil for a
	// one-shot upload without them.
	cps       atomic.Pointer[checkpoints]
	buffer    []byte
	sendMD5   *[16]byte // the caller's MD5 of the object (WithSendMD5), sent as it is
	chunkSize int
	retry     *retryConfig // the client's, until a WithRetry of the Writer's own
	sendCRC   uint32       // the caller's CRC32C of the object, if hasCRC
	knob      knob.Writer  // package experimental's settings
	hasCRC    bool
	conds     uint8 // which Conditions fields WithConditions set (condDoesNotExist, ...)
	md5Len    uint8 // 1 + the length of WithSendMD5's sum (at most 255); 0: none
	hasBuffer bool
	ownRetry  bool
	appending bool // WithAppendable
	keepOpen  bool // WithoutFinalize
	resumable bool // WithResumable
}

// validate is the one check of a Writer's options, opts, once applied in
// order, on a client that uploads over gRPC or not. It writes the
// attributes (WithAttrs, read from opts again, so the config keeps no copy
// of them) and the preconditions into the request.
func (c *writerConfig) validate(opts []WriterOption, grpc bool) error {
	for _, o := range opts {
		if a, ok := o.(*attrsOption); ok {
			if err := c.setAttrs(&a.attrs); err != nil {
				return err
			}
		}
	}
	if err := c.checkConditions(); err != nil {
		return err
	}
	switch {
	case c.md5Len != 0 && c.sendMD5 == nil:
		return fmt.Errorf("MD5 of %d bytes, want 16", c.md5Len-1)
	case c.hasBuffer && len(c.buffer) == 0:
		return errors.New("WithBuffer: buffer is nil or empty")
	case c.knob.MD5 && c.sendMD5 != nil:
		return errors.New("WithMD5 and WithSendMD5 exclude each other")
	case c.resumable && (c.appending || c.parallel != nil):
		return errors.New("WithResumable excludes WithAppendable and WithParallelUpload, which have no session of their own")
	case !c.appending && c.keepOpen:
		return errors.New("WithoutFinalize needs WithAppendable")
	}
	if c.chunkSize != 0 {
		if err := checkChunkSize(c.chunkSize); err != nil {
			return err
		}
	}
	if c.ownRetry {
		if err := c.retry.validate(); err != nil {
			return err
		}
	}
	if err := c.checkParallel(); err != nil {
		return err
	}
	if err := c.checkJournal(); err != nil {
		return err
	}
	return c.checkAppendable(grpc)
}

// WithAttrs gives the object the attributes of a, as the official client's
// Writer takes them from its ObjectAttrs: ContentType (sniffed from the
// first 512 bytes with http.DetectContentType when empty, as the official
// client does), ContentEncoding, ContentDisposition, ContentLanguage,
// CacheControl, StorageClass (empty: the bucket's default), Metadata and
// Contexts (read when NewWriter applies the option, not kept; keys must not
// be empty), CustomTime (Object.custom_time, which lifecycle rules such as
// daysSinceCustomTime read), KMSKeyName (a Cloud KMS key,
// projects/P/locations/L/keyRings/R/cryptoKeys/K, optionally followed by
// /cryptoKeyVersions/V), PredefinedACL (authenticatedRead, bucketOwnerFullControl, bucketOwnerRead, private, projectPrivate or publicRead) or ACL
// (READER or OWNER rules; the two exclude each other, and buckets with
// uniform bucket-level access reject both), Retention (the object can be
// neither deleted nor overwritten until RetainUntil, which must be in the
// future; the bucket must allow object retention), TemporaryHold and
// EventBasedHold (set when true; false leaves the bucket's default). Zero
// fields set nothing, and the fields the service sets (Size, Generation,
// CRC32C, Created and the like) are ignored.
func WithAttrs(a ObjectAttrs) WriterOption {
	return &attrsOption{attrs: a}
}

// attrsOption is WithAttrs: validate reads it.
type attrsOption struct{ attrs ObjectAttrs }

func (*attrsOption) applyWriter(*writerConfig) {}

// setAttrs checks a and writes it into the object's resource and spec.
func (c *writerConfig) setAttrs(a *ObjectAttrs) error {
	o := c.obj
	for _, f := range []struct {
		dst *string
		v   string
	}{
		{&o.ContentType, a.ContentType}, {&o.ContentEncoding, a.ContentEncoding},
		{&o.ContentDisposition, a.ContentDisposition}, {&o.ContentLanguage, a.ContentLanguage},
		{&o.CacheControl, a.CacheControl}, {&o.StorageClass, a.StorageClass},
	} {
		if f.v != "" {
			*f.dst = f.v
		}
	}
	for k, v := range a.Metadata {
		if k == "" {
			return fmt.Errorf("metadata has an empty key")
		}
		if o.Metadata == nil {
			o.Metadata = make(map[string]string, len(a.Metadata))
		}
		o.Metadata[k] = v
	}
	if !a.CustomTime.IsZero() {
		o.CustomTime = timestamppb.New(a.CustomTime)
	}
	if a.KMSKeyName != "" {
		if err := checkKMSKeyName(a.KMSKeyName); err != nil {
			return err
		}
		o.KmsKey = a.KMSKeyName
	}
	if a.PredefinedACL != "" {
		if !predefinedACLs[a.PredefinedACL] {
			return fmt.Errorf("predefined ACL %q is not one of authenticatedRead, bucketOwnerFullControl, bucketOwnerRead, private, projectPrivate, publicRead", a.PredefinedACL)
		}
		c.spec.PredefinedAcl = a.PredefinedACL
	}
	if len(a.ACL) > 0 {
		acl := make([]*wire.ObjectAccessControl, 0, len(a.ACL))
		for _, r := range a.ACL {
			if r.Entity == "" || !utf8.ValidString(r.Entity) {
				return fmt.Errorf("ACL rule with an empty or invalid entity")
			}
			if r.Role != "READER" && r.Role != "OWNER" {
				return fmt.Errorf("ACL role %q for %q is not READER or OWNER", r.Role, r.Entity)
			}
			acl = append(acl, &wire.ObjectAccessControl{Entity: r.Entity, Role: r.Role})
		}
		o.Acl = acl
	}
	if c.spec.PredefinedAcl != "" && len(o.Acl) > 0 {
		return fmt.Errorf("PredefinedACL and ACL exclude each other")
	}
	if r := a.Retention; r != nil {
		mode, ok := retentionModes[r.Mode]
		if !ok {
			return fmt.Errorf("retention mode %q is not Unlocked or Locked", r.Mode)
		}
		if !r.RetainUntil.After(time.Now()) {
			return fmt.Errorf("retain-until time %v is not in the future", r.RetainUntil)
		}
		o.Retention = &wire.Object_Retention{Mode: mode, RetainUntilTime: timestamppb.New(r.RetainUntil)}
	}
	if a.TemporaryHold {
		o.TemporaryHold = true
	}
	if a.EventBasedHold {
		on := true
		o.EventBasedHold = &on
	}
	if len(a.Contexts) > 0 {
		custom := make(map[string]*wire.ObjectCustomContextPayload, len(a.Contexts))
		for k, v := range a.Contexts {
			if k == "" {
				return fmt.Errorf("context has an empty key")
			}
			custom[k] = &wire.ObjectCustomContextPayload{Value: v}
		}
		o.Contexts = &wire.ObjectContexts{Custom: custom}
	}
	return nil
}

func checkKMSKeyName(name string) error {
	p := strings.Split(name, "/")
	if (len(p) != 8 && len(p) != 10) || p[0] != "projects" || p[2] != "locations" || p[4] != "keyRings" || p[6] != "cryptoKeys" ||
		(len(p) == 10 && p[8] != "cryptoKeyVersions") {
		return fmt.Errorf("KMS key name %q is not projects/P/locations/L/keyRings/R/cryptoKeys/K", name)
	}
	for _, s := range p {
		if s == "" {
			return fmt.Errorf("KMS key name %q has an empty part", name)
		}
	}
	return nil
}

// predefinedACLs are the values ObjectAttrs.PredefinedACL takes, as the
// v2 API names them.
var predefinedACLs = map[string]bool{
	"authenticatedRead": true, "bucketOwnerFullControl": true, "bucketOwnerRead": true,
	"private": true, "projectPrivate": true, "publicRead": true,
}

// ACLRule grants Role ("READER" or "OWNER") to Entity, as in the official
// client's storage.ACLRule: "allUsers", "allAuthenticatedUsers",
// "user-EMAIL", "group-EMAIL", "domain-DOMAIN", "project-TEAM-PROJECT".
type ACLRule struct {
	Entity string
	Role   string
}

// WithResumable sends the object through a resumable session however small
// it is: one more round trip than a one-shot write (StartResumableWrite, or
// the JSON API's session start), and in exchange an outcome the session
// makes exact. A session finalizes one object at most and is itself the
// authority on whether it did: after a lost answer the upload asks it
// (QueryWriteStatus) rather than look the object up, an upload that fails
// once its finish may have gone out cancels the session, after which
// nothing of it can be finalized, and a message of the session that
// arrives late can never make a second generation. So Close returns nil
// only for the object this upload stored, once, and an error for which
// IsOutcomeUnknown is false means that nothing was stored and nothing will
// be. Together with WithConditions(Conditions{DoesNotExist: true}), it is exactly once: see "The truth
// about an outcome" in the package doc. It excludes WithAppendable and
// WithParallelUpload.
func WithResumable() WriterOption {
	return writerOptionFunc(func(c *writerConfig) { c.resumable = true })
}

// Conditions are preconditions on the object an upload replaces, as the
// official client's storage.Conditions: the upload fails with code
// FailedPrecondition (HTTP 412) unless they hold, and nothing is stored.
// Any precondition makes a one-shot upload idempotent, so it is retried
// under RetryIdempotent. Zero fields set nothing.
type Conditions struct {
	// DoesNotExist: the object must not exist (ifGenerationMatch=0). It
	// excludes GenerationMatch and GenerationNotMatch.
	DoesNotExist bool
	// GenerationMatch: the object's live generation must be this one.
	GenerationMatch int64
	// GenerationNotMatch: the object's live generation must not be this
	// one.
	GenerationNotMatch int64
	// MetagenerationMatch: the object's live metageneration must be this
	// one.
	MetagenerationMatch int64
	// MetagenerationNotMatch: the object's live metageneration must not be
	// this one.
	MetagenerationNotMatch int64
}

// WithConditions sets the upload's preconditions (see Conditions); a
// later WithConditions replaces an earlier one. Negative values, or
// conflicting ones, are rejected by NewWriter.
func WithConditions(cond Conditions) WriterOption {
	return writerOptionFunc(func(c *writerConfig) {
		s := c.spec
		s.IfGenerationMatch, s.IfGenerationNotMatch, s.IfMetagenerationMatch, s.IfMetagenerationNotMatch = nil, nil, nil, nil
		c.conds = 0
		set := func(dst **int64, v int64, bit uint8) {
			if v != 0 || bit == condDoesNotExist {
				*dst, c.conds = &v, c.conds|bit
			}
		}
		if cond.DoesNotExist {
			set(&s.IfGenerationMatch, 0, condDoesNotExist)
		}
		set(&s.IfGenerationMatch, cond.GenerationMatch, condGenerationMatch)
		set(&s.IfGenerationNotMatch, cond.GenerationNotMatch, condGenerationNotMatch)
		set(&s.IfMetagenerationMatch, cond.MetagenerationMatch, condMetagenerationMatch)
		set(&s.IfMetagenerationNotMatch, cond.MetagenerationNotMatch, condMetagenerationNotMatch)
	})
}

// The Conditions fields WithConditions set, as bits of writerConfig.conds.
const (
	condDoesNotExist uint8 = 1 << iota
	condGenerationMatch
	condGenerationNotMatch
	condMetagenerationMatch
	condMetagenerationNotMatch
)

// checkConditions checks the preconditions WithConditions wrote into the
// spec.
func (c *writerConfig) checkConditions() error {
	s, k := c.spec, c.conds
	has := func(bits uint8) bool { return k&bits == bits }
	switch {
	case s.GetIfGenerationMatch() < 0 || s.GetIfGenerationNotMatch() < 0 || s.GetIfMetagenerationMatch() < 0 || s.GetIfMetagenerationNotMatch() < 0:
		return errors.New("conditions: generations and metagenerations must not be negative")
	case has(condDoesNotExist) && (k&(condGenerationMatch|condGenerationNotMatch) != 0):
		return errors.New("conditions: DoesNotExist excludes GenerationMatch and GenerationNotMatch")
	case has(condGenerationMatch | condGenerationNotMatch):
		return errors.New("conditions: GenerationMatch and GenerationNotMatch exclude each other")
	case has(condMetagenerationMatch | condMetagenerationNotMatch):
		return errors.New("conditions: MetagenerationMatch and MetagenerationNotMatch exclude each other")
	}
	return nil
}

// WithSendCRC32C sends crc, the CRC32C (Castagnoli) of the whole object that
// the caller already has, as the object's checksum, like the official
// Writer's SendCRC32C: the service verifies it, and an object whose bytes do
// not match fails with DATA_LOSS (code DataLoss) and is not stored. Each
// message still carries the CRC32C of its own bytes. An appendable object
// (WithAppendable) is checked by objup before its finish goes out: a
// mismatch is DATA_LOSS and the object is not finalized, though the bytes
// a Flush made durable stay in it, unfinalized, as appendable objects do.
func WithSendCRC32C(crc uint32) WriterOption {
	return writerOptionFunc(func(c *writerConfig) { c.sendCRC, c.hasCRC = crc, true })
}

// WithSendMD5 sends sum, the MD5 of the whole object that the caller already
// has: the service verifies it, objup does not compute it, and an object
// whose bytes do not match fails with DATA_LOSS and is not stored. sum must be
// 16 bytes; it excludes experimental.WithMD5.
func WithSendMD5(sum []byte) WriterOption {
	n := uint8(1 + min(len(sum), 254))
	var md5 *[16]byte
	if len(sum) == 16 {
		md5 = (*[16]byte)(bytes.Clone(sum))
	}
	return writerOptionFunc(func(c *writerConfig) { c.sendMD5, c.md5Len = md5, n })
}

// WithProgress calls f with the number of bytes the service has
// acknowledged (persisted; for a parallel upload, the bytes of the parts
// stored) as they grow, ending with the object's size once it is stored.
// f runs on whichever goroutine learnt of the acknowledgement (a stream's
// receiver, a part's, or the Writer's caller), one call at a time, with
// growing values, and never under one of objup's locks, so it may call
// anything but the Writer itself. It should return quickly: the goroutine
// that runs it carries the upload's acknowledgements.
func WithProgress(f func(persisted int64)) WriterOption {
	return writerOptionFunc(func(c *writerConfig) { c.tracking().progress = mode.NewProgress(f) })
}

// WithBuffer makes the Writer use buf, the caller's memory, for its chunks
// instead of the client's pool (caller-managed pooling).
//
// A buffer of at least pool.Quantum (256 KiB) is cut into slots of one quantum,
// so an upload of any size works and keeps at most len(buf)/Quantum chunks in
// flight. A smaller buffer serves objects that fit in it, sent in one call; an
// object that outgrows it fails with an InvalidArgument error, and nothing is
// stored.
//
// The Writer owns buf from NewWriter until Close (or CloseWithError) returns,
// and never touches it afterwards, whatever the outcome: the caller may then
// reuse it, for instance for the next Writer.
func WithBuffer(buf []byte) WriterOption {
	return writerOptionFunc(func(c *writerConfig) { c.buffer, c.hasBuffer = buf, true })
}
