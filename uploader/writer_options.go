package uploader

import (
	"bytes"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/objup/objup/internal/wire"
)

// WriterOption configures one Writer (NewWriter, Upload, Item.Options). Each
// is validated when NewWriter applies it: an invalid value is an
// InvalidArgument error and nothing is sent.
type WriterOption interface {
	applyWriter(*writerConfig) error
}

type writerOptionFunc func(*writerConfig) error

func (f writerOptionFunc) applyWriter(c *writerConfig) error { return f(c) }

// writerConfig is what the options set. The object's attributes and the
// preconditions go straight into the request, where the v2 API puts them:
// spec is the Writer's WriteObjectSpec, and obj its resource.
type writerConfig struct {
	spec      *wire.WriteObjectSpec
	obj       *wire.Object
	progress  *progressReporter // made per Writer (see Writer.init)
	parallel  *parallel         // WithParallelUpload: its settings, and its state once started
	buffer    []byte
	sendMD5   *[16]byte // the caller's MD5 of the object, sent as it is
	chunkSize int
	retry     *retryConfig // the client's, until a WithRetry of the Writer's own
	sendCRC   uint32       // the caller's CRC32C of the object, if hasCRC
	hasCRC    bool
	noCRC32C  bool
	md5       bool
	hasBuffer bool
	ownRetry  bool
	appending bool // WithAppendable
	keepOpen  bool // WithoutFinalize
	resumable bool // WithResumable
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
// /cryptoKeyVersions/V), PredefinedACL (one of the ACL constants) or ACL
// (READER or OWNER rules; the two exclude each other, and buckets with
// uniform bucket-level access reject both), Retention (the object can be
// neither deleted nor overwritten until RetainUntil, which must be in the
// future; the bucket must allow object retention), TemporaryHold and
// EventBasedHold (set when true; false leaves the bucket's default). Zero
// fields set nothing, and the fields the service sets (Size, Generation,
// CRC32C, Created and the like) are ignored.
func WithAttrs(a ObjectAttrs) WriterOption {
	return writerOptionFunc(func(c *writerConfig) error { return c.setAttrs(&a) })
}

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
		switch a.PredefinedACL {
		case ACLAuthenticatedRead, ACLBucketOwnerFullControl, ACLBucketOwnerRead, ACLPrivate, ACLProjectPrivate, ACLPublicRead:
		default:
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

// Predefined ACLs that ObjectAttrs.PredefinedACL takes, as the v2 API names
// them.
const (
	ACLAuthenticatedRead      = "authenticatedRead"
	ACLBucketOwnerFullControl = "bucketOwnerFullControl"
	ACLBucketOwnerRead        = "bucketOwnerRead"
	ACLPrivate                = "private"
	ACLProjectPrivate         = "projectPrivate"
	ACLPublicRead             = "publicRead"
)

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
// be. Together with WithDoesNotExist, it is exactly once: see "The truth
// about an outcome" in the package doc. It excludes WithAppendable and
// WithParallelUpload.
func WithResumable() WriterOption {
	return writerOptionFunc(func(c *writerConfig) error { c.resumable = true; return nil })
}

// WithDoesNotExist makes the upload fail with a precondition error (see
// IsPreconditionFailed) if the object already exists. Like every
// precondition, it makes the upload idempotent, so a one-shot upload is
// retried under RetryIdempotent.
func WithDoesNotExist() WriterOption {
	return WithGenerationMatch(0)
}

// WithGenerationMatch makes the upload succeed only if the object's live
// generation is gen (0: the object must not exist).
func WithGenerationMatch(gen int64) WriterOption {
	return writerOptionFunc(func(c *writerConfig) error {
		if gen < 0 {
			return fmt.Errorf("generation %d is negative", gen)
		}
		c.spec.IfGenerationMatch = &gen
		return nil
	})
}

// WithGenerationNotMatch makes the upload succeed only if the object's live
// generation is not gen (0: the object must exist).
func WithGenerationNotMatch(gen int64) WriterOption {
	return writerOptionFunc(func(c *writerConfig) error {
		if gen < 0 {
			return fmt.Errorf("generation %d is negative", gen)
		}
		c.spec.IfGenerationNotMatch = &gen
		return nil
	})
}

// WithMetagenerationMatch makes the upload succeed only if the object's live
// metageneration is mg.
func WithMetagenerationMatch(mg int64) WriterOption {
	return writerOptionFunc(func(c *writerConfig) error {
		if mg <= 0 {
			return fmt.Errorf("metageneration %d must be positive", mg)
		}
		c.spec.IfMetagenerationMatch = &mg
		return nil
	})
}

// WithMetagenerationNotMatch makes the upload succeed only if the object's
// live metageneration is not mg.
func WithMetagenerationNotMatch(mg int64) WriterOption {
	return writerOptionFunc(func(c *writerConfig) error {
		if mg <= 0 {
			return fmt.Errorf("metageneration %d must be positive", mg)
		}
		c.spec.IfMetagenerationNotMatch = &mg
		return nil
	})
}

// WithoutCRC32C stops sending CRC32C checksums (per message and for the whole
// object). They are sent by default and cost one pass over the data.
func WithoutCRC32C() WriterOption {
	return writerOptionFunc(func(c *writerConfig) error { c.noCRC32C = true; return nil })
}

// WithMD5 computes the object's MD5 while writing and sends it with the last
// message, so the service verifies it too. It costs a second pass over the data.
// WithSendMD5 sends an MD5 the caller already has instead.
func WithMD5() WriterOption {
	return writerOptionFunc(func(c *writerConfig) error { c.md5 = true; return nil })
}

// WithSendCRC32C sends crc, the CRC32C (Castagnoli) of the whole object that
// the caller already has, as the object's checksum, like the official
// Writer's SendCRC32C: the service verifies it, and an object whose bytes do
// not match fails with DATA_LOSS (see IsDataLoss) and is not stored. Each
// message still carries the CRC32C of its own bytes. An appendable object
// (WithAppendable) is checked by objup before its finish goes out: a
// mismatch is DATA_LOSS and the object is not finalized, though the bytes
// a Flush made durable stay in it, unfinalized, as appendable objects do.
func WithSendCRC32C(crc uint32) WriterOption {
	return writerOptionFunc(func(c *writerConfig) error {
		c.sendCRC, c.hasCRC = crc, true
		return nil
	})
}

// WithSendMD5 sends sum, the MD5 of the whole object that the caller already
// has: the service verifies it, objup does not compute it, and an object
// whose bytes do not match fails with DATA_LOSS and is not stored. sum must be
// 16 bytes; it excludes WithMD5.
func WithSendMD5(sum []byte) WriterOption {
	return writerOptionFunc(func(c *writerConfig) error {
		if len(sum) != 16 {
			return fmt.Errorf("MD5 of %d bytes, want 16", len(sum))
		}
		c.sendMD5 = (*[16]byte)(bytes.Clone(sum))
		return nil
	})
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
	return writerOptionFunc(func(c *writerConfig) error { c.progress = newProgress(f); return nil })
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
	return writerOptionFunc(func(c *writerConfig) error {
		if len(buf) == 0 {
			return fmt.Errorf("WithBuffer: buffer is nil or empty")
		}
		c.buffer = buf
		c.hasBuffer = true
		return nil
	})
}
