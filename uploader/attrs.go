package uploader

import (
	"time"

	"github.com/objup/objup/internal/wire"
)

// ObjectAttrs are the attributes of a stored object, as the service reported
// them when the upload finished (Writer.Attrs), and the attributes a Writer
// gives the object it uploads (WithAttrs), as the official client's
// ObjectAttrs are.
type ObjectAttrs struct {
	Bucket             string
	Name               string
	Size               int64
	Generation         int64
	Metageneration     int64
	ContentType        string
	ContentEncoding    string
	ContentDisposition string
	ContentLanguage    string
	CacheControl       string
	StorageClass       string
	Metadata           map[string]string
	// CRC32C is the Castagnoli CRC of the content; HasCRC32C tells whether the
	// service reported one.
	CRC32C    uint32
	HasCRC32C bool
	// MD5 is the content's MD5 digest, when the service reported one.
	MD5     []byte
	Etag    string
	Created time.Time
	Updated time.Time
	// CustomTime is the object's custom time, zero if none.
	CustomTime time.Time
	// Finalized is when the object was finalized: zero for an appendable
	// object left unfinalized (WithoutFinalize).
	Finalized time.Time
	// KMSKeyName names the Cloud KMS key that encrypts the object, if any.
	KMSKeyName string
	// ACL is the object's access control list, as the service reported it.
	ACL []ACLRule
	// Retention is the object's retention, nil if none.
	Retention *Retention
	// TemporaryHold and EventBasedHold tell whether the holds are set.
	TemporaryHold  bool
	EventBasedHold bool
	// Contexts are the object's custom contexts.
	Contexts map[string]string
	// PredefinedACL is the predefined ACL applied to the object (one of the
	// ACL constants), an input only: the service reports the ACL.
	PredefinedACL string
}

// Retention is an object's retention, as the official client's
// ObjectRetention: the time until which the object can be neither deleted
// nor overwritten, and the mode, "Unlocked" (the retention may be shortened
// or removed later) or "Locked" (it may not).
type Retention struct {
	Mode        string
	RetainUntil time.Time
}

// retentionModes maps Retention.Mode to the API's enum.
var retentionModes = map[string]wire.Object_Retention_Mode{
	"Unlocked": wire.Object_Retention_UNLOCKED,
	"Locked":   wire.Object_Retention_LOCKED,
}

const bucketPrefix = "projects/_/buckets/"

// setFromObject fills a from the service's object.
func (a *ObjectAttrs) setFromObject(o *wire.Object) {
	*a = ObjectAttrs{
		Bucket:             trimBucket(o.GetBucket()),
		Name:               o.GetName(),
		Size:               o.GetSize(),
		Generation:         o.GetGeneration(),
		Metageneration:     o.GetMetageneration(),
		ContentType:        o.GetContentType(),
		ContentEncoding:    o.GetContentEncoding(),
		ContentDisposition: o.GetContentDisposition(),
		ContentLanguage:    o.GetContentLanguage(),
		CacheControl:       o.GetCacheControl(),
		StorageClass:       o.GetStorageClass(),
		Metadata:           o.GetMetadata(),
		Etag:               o.GetEtag(),
	}
	if cs := o.GetChecksums(); cs != nil {
		if cs.Crc32C != nil {
			a.CRC32C, a.HasCRC32C = cs.GetCrc32C(), true
		}
		a.MD5 = cs.GetMd5Hash()
	}
	if t := o.GetCreateTime(); t != nil {
		a.Created = t.AsTime()
	}
	if t := o.GetUpdateTime(); t != nil {
		a.Updated = t.AsTime()
	}
	if t := o.GetFinalizeTime(); t != nil {
		a.Finalized = t.AsTime()
	}
	if t := o.GetCustomTime(); t != nil {
		a.CustomTime = t.AsTime()
	}
	a.KMSKeyName = o.GetKmsKey()
	if acl := o.GetAcl(); len(acl) > 0 {
		a.ACL = make([]ACLRule, len(acl))
		for i, r := range acl {
			a.ACL[i] = ACLRule{Entity: r.GetEntity(), Role: r.GetRole()}
		}
	}
	if r := o.GetRetention(); r != nil {
		a.Retention = &Retention{RetainUntil: r.GetRetainUntilTime().AsTime()}
		for name, m := range retentionModes {
			if m == r.GetMode() {
				a.Retention.Mode = name
			}
		}
	}
	a.TemporaryHold, a.EventBasedHold = o.GetTemporaryHold(), o.GetEventBasedHold()
	if c := o.GetContexts().GetCustom(); len(c) > 0 {
		a.Contexts = make(map[string]string, len(c))
		for k, v := range c {
			a.Contexts[k] = v.GetValue()
		}
	}
}

func trimBucket(b string) string {
	if len(b) > len(bucketPrefix) && b[:len(bucketPrefix)] == bucketPrefix {
		return b[len(bucketPrefix):]
	}
	return b
}
