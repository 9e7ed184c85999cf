package httpx

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/xfer"
)

// metadataJSON is the object resource an upload sends: the spec's resource
// and the caller's checksums, in the JSON API's names.
func metadataJSON(spec *wire.WriteObjectSpec, checksums *wire.ObjectChecksums) []byte {
	o := spec.GetResource()
	m := map[string]any{"name": o.GetName()}
	for k, v := range map[string]string{
		"contentType": o.GetContentType(), "contentEncoding": o.GetContentEncoding(),
		"contentDisposition": o.GetContentDisposition(), "contentLanguage": o.GetContentLanguage(),
		"cacheControl": o.GetCacheControl(), "storageClass": o.GetStorageClass(), "kmsKeyName": o.GetKmsKey(),
	} {
		if v != "" {
			m[k] = v
		}
	}
	if len(o.GetMetadata()) > 0 {
		m["metadata"] = o.GetMetadata()
	}
	if t := o.GetCustomTime(); t != nil {
		m["customTime"] = t.AsTime().Format(time.RFC3339Nano)
	}
	if acl := o.GetAcl(); len(acl) > 0 {
		rules := make([]map[string]string, len(acl))
		for i, a := range acl {
			rules[i] = map[string]string{"entity": a.GetEntity(), "role": a.GetRole()}
		}
		m["acl"] = rules
	}
	if o.GetTemporaryHold() {
		m["temporaryHold"] = true
	}
	if o.EventBasedHold != nil {
		m["eventBasedHold"] = o.GetEventBasedHold()
	}
	if r := o.GetRetention(); r != nil {
		mode := "Unlocked"
		if r.GetMode() == wire.Object_Retention_LOCKED {
			mode = "Locked"
		}
		m["retention"] = map[string]string{"mode": mode, "retainUntilTime": r.GetRetainUntilTime().AsTime().Format(time.RFC3339Nano)}
	}
	if c := o.GetContexts().GetCustom(); len(c) > 0 {
		custom := make(map[string]map[string]string, len(c))
		for k, v := range c {
			custom[k] = map[string]string{"value": v.GetValue()}
		}
		m["contexts"] = map[string]any{"custom": custom}
	}
	if checksums != nil {
		if checksums.Crc32C != nil {
			m["crc32c"] = encodeCRC32C(checksums.GetCrc32C())
		}
		if len(checksums.GetMd5Hash()) > 0 {
			m["md5Hash"] = base64.StdEncoding.EncodeToString(checksums.GetMd5Hash())
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("uploader: object metadata does not encode: %v", err))
	}
	return b
}

// encodeCRC32C is the JSON API's form of a CRC32C: base64 of its 4
// big-endian bytes.
func encodeCRC32C(c uint32) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], c)
	return base64.StdEncoding.EncodeToString(b[:])
}

// hashHeader is the X-Goog-Hash value for the whole object's checksums.
func hashHeader(cs *wire.ObjectChecksums) string {
	var parts []string
	if cs.Crc32C != nil {
		parts = append(parts, "crc32c="+encodeCRC32C(cs.GetCrc32C()))
	}
	if len(cs.GetMd5Hash()) > 0 {
		parts = append(parts, "md5="+base64.StdEncoding.EncodeToString(cs.GetMd5Hash()))
	}
	return strings.Join(parts, ",")
}

// jsonObject is the part of the JSON API's object resource objup reads.
type jsonObject struct {
	Name               string            `json:"name"`
	Bucket             string            `json:"bucket"`
	Generation         int64             `json:"generation,string"`
	Metageneration     int64             `json:"metageneration,string"`
	Size               int64             `json:"size,string"`
	ComponentCount     int32             `json:"componentCount"`
	ContentType        string            `json:"contentType"`
	ContentEncoding    string            `json:"contentEncoding"`
	ContentDisposition string            `json:"contentDisposition"`
	ContentLanguage    string            `json:"contentLanguage"`
	CacheControl       string            `json:"cacheControl"`
	StorageClass       string            `json:"storageClass"`
	Metadata           map[string]string `json:"metadata"`
	CRC32C             string            `json:"crc32c"`
	MD5Hash            string            `json:"md5Hash"`
	Etag               string            `json:"etag"`
	TimeCreated        time.Time         `json:"timeCreated"`
	Updated            time.Time         `json:"updated"`
	TimeFinalized      *time.Time        `json:"timeFinalized"`
	CustomTime         *time.Time        `json:"customTime"`
	KMSKeyName         string            `json:"kmsKeyName"`
	ACL                []struct {
		Entity string `json:"entity"`
		Role   string `json:"role"`
	} `json:"acl"`
	TemporaryHold  bool  `json:"temporaryHold"`
	EventBasedHold *bool `json:"eventBasedHold"`
	Retention      *struct {
		Mode            string    `json:"mode"`
		RetainUntilTime time.Time `json:"retainUntilTime"`
	} `json:"retention"`
	Contexts *struct {
		Custom map[string]struct {
			Value string `json:"value"`
		} `json:"custom"`
	} `json:"contexts"`
}

// decodeError classifies a failure to read an answer's JSON: a body that
// is not the JSON of an object is the service's fault (Internal); one that
// broke off (a reset, a cut, a truncated body) is the network's
// (Unavailable), as every other network failure.
func decodeError(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syntax) || errors.As(err, &typ) {
		return status.Errorf(codes.Internal, "the service's object resource does not decode: %v", err)
	}
	return status.Errorf(codes.Unavailable, "the service's answer broke off: %v", err)
}

// readObject decodes the object resource of a finished upload into the
// storage v2 form the Writer checks.
func readObject(r io.Reader) (*wire.Object, error) {
	var j jsonObject
	if err := json.NewDecoder(r).Decode(&j); err != nil {
		return nil, decodeError(err)
	}
	o := &wire.Object{
		Name: j.Name, Bucket: xfer.BucketPrefix + j.Bucket, Generation: j.Generation, Metageneration: j.Metageneration,
		Size: j.Size, ContentType: j.ContentType, ContentEncoding: j.ContentEncoding,
		ContentDisposition: j.ContentDisposition, ContentLanguage: j.ContentLanguage, CacheControl: j.CacheControl,
		StorageClass: j.StorageClass, Metadata: j.Metadata, Etag: j.Etag, KmsKey: j.KMSKeyName,
		TemporaryHold: j.TemporaryHold, EventBasedHold: j.EventBasedHold, ComponentCount: j.ComponentCount,
	}
	cs := &wire.ObjectChecksums{}
	if b, err := base64.StdEncoding.DecodeString(j.CRC32C); err == nil && len(b) == 4 {
		crc := binary.BigEndian.Uint32(b)
		cs.Crc32C = &crc
	}
	if b, err := base64.StdEncoding.DecodeString(j.MD5Hash); err == nil && len(b) == 16 {
		cs.Md5Hash = b
	}
	o.Checksums = cs
	if !j.TimeCreated.IsZero() {
		o.CreateTime = timestamppb.New(j.TimeCreated)
	}
	if !j.Updated.IsZero() {
		o.UpdateTime = timestamppb.New(j.Updated)
	}
	if j.TimeFinalized != nil && !j.TimeFinalized.IsZero() {
		o.FinalizeTime = timestamppb.New(*j.TimeFinalized)
	}
	if j.CustomTime != nil {
		o.CustomTime = timestamppb.New(*j.CustomTime)
	}
	for _, a := range j.ACL {
		o.Acl = append(o.Acl, &wire.ObjectAccessControl{Entity: a.Entity, Role: a.Role})
	}
	if r := j.Retention; r != nil {
		mode := wire.Object_Retention_UNLOCKED
		if r.Mode == "Locked" {
			mode = wire.Object_Retention_LOCKED
		}
		o.Retention = &wire.Object_Retention{Mode: mode, RetainUntilTime: timestamppb.New(r.RetainUntilTime)}
	}
	if c := j.Contexts; c != nil && len(c.Custom) > 0 {
		o.Contexts = &wire.ObjectContexts{Custom: make(map[string]*wire.ObjectCustomContextPayload, len(c.Custom))}
		for k, v := range c.Custom {
			o.Contexts.Custom[k] = &wire.ObjectCustomContextPayload{Value: v.Value}
		}
	}
	return o, nil
}
