package fakes

import (
	"encoding/base64"
	"encoding/binary"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/fakes/internal/writes"
	"github.com/objup/objup/internal/wire"
)

// maxChunk is the service's limit on the content of one message, both ways
// (MAX_WRITE_CHUNK_BYTES and MAX_READ_CHUNK_BYTES).
const maxChunk = writes.MaxMessage

const bucketPrefix = "projects/_/buckets/"

// parseBucket turns "projects/_/buckets/NAME" (any project) into NAME.
func parseBucket(resource string) (string, error) {
	rest, ok := strings.CutPrefix(resource, "projects/")
	project, name, ok2 := strings.Cut(rest, "/buckets/")
	if !ok || !ok2 || project == "" || strings.Contains(project, "/") || name == "" || strings.Contains(name, "/") {
		return "", status.Errorf(codes.InvalidArgument, "bucket %q is not a bucket resource name like %q", resource, bucketPrefix+"NAME")
	}
	return name, nil
}

// bucketOf parses a bucket resource name and returns the bucket.
func (s *Server) bucketOf(resource string) (*store.Bucket, error) {
	name, err := parseBucket(resource)
	if err != nil {
		return nil, err
	}
	return s.store.Bucket(name)
}

// checkObjectName applies the GCS object naming rules.
func checkObjectName(name string) error {
	var why string
	switch {
	case name == "":
		why = "is empty"
	case len(name) > 1024:
		why = "is longer than 1024 bytes"
	case !utf8.ValidString(name):
		why = "is not valid UTF-8"
	case strings.ContainsAny(name, "\r\n"):
		why = "contains a carriage return or line feed"
	case name == "." || name == "..":
		why = `is "." or ".."`
	case strings.HasPrefix(name, ".well-known/acme-challenge/"):
		why = `starts with ".well-known/acme-challenge/"`
	default:
		return nil
	}
	return status.Errorf(codes.InvalidArgument, "object name %.64q %s", name, why)
}

// checkCommon rejects customer-supplied encryption keys, which the fake does
// not implement.
func checkCommon(p *wire.CommonObjectRequestParams) error {
	if p.GetEncryptionAlgorithm() != "" || len(p.GetEncryptionKeyBytes()) > 0 {
		return status.Error(codes.Unimplemented, "customer-supplied encryption keys are not supported by the fake")
	}
	return nil
}

// toObject converts a stored object into the API's Object. The Object shares
// o's metadata map, which is never written once stored: the caller may
// marshal it but must not change it.
func toObject(b *store.Bucket, o *store.Object) *wire.Object {
	crc := o.CRC32C()
	w := &wire.Object{
		Name:                   o.Name(),
		Bucket:                 b.ResName(),
		Etag:                   etag(o.Generation(), o.Metageneration()),
		Generation:             o.Generation(),
		Metageneration:         o.Metageneration(),
		StorageClass:           o.Attrs().StorageClass,
		Size:                   o.Size(),
		ContentEncoding:        o.Attrs().ContentEncoding,
		ContentDisposition:     o.Attrs().ContentDisposition,
		CacheControl:           o.Attrs().CacheControl,
		ContentLanguage:        o.Attrs().ContentLanguage,
		ContentType:            o.Attrs().ContentType,
		CreateTime:             timestamp(o.Created()),
		UpdateTime:             timestamp(o.Updated()),
		FinalizeTime:           timestamp(o.FinalizeTime()),
		UpdateStorageClassTime: timestamp(o.Created()),
		CustomTime:             timestamp(o.Attrs().CustomTime),
		Metadata:               o.Attrs().Metadata,
		Checksums:              &wire.ObjectChecksums{Crc32C: &crc},
		ComponentCount:         int32(o.ComponentCount()),
	}
	if o.HasMD5() {
		sum := o.MD5()
		w.Checksums.Md5Hash = sum[:]
	}
	setExtra(o.Attrs().Extra, w)
	return w
}

// etag is an object's ETag as GCS forms it: base64 of a small message
// holding the generation (field 1) and the metageneration (field 2).
func etag(gen, meta int64) string {
	b := make([]byte, 0, 24)
	b = append(b, 0x08)
	b = binary.AppendUvarint(b, uint64(gen))
	b = append(b, 0x10)
	b = binary.AppendUvarint(b, uint64(meta))
	return base64.StdEncoding.EncodeToString(b)
}

// timestamp converts Unix microseconds (0: unset) into a Timestamp.
func timestamp(us int64) *timestamppb.Timestamp {
	if us == 0 {
		return nil
	}
	return timestamppb.New(time.UnixMicro(us))
}

// encodeCRC32C is fake-gcs-server's (and the JSON API's) form of a CRC32C:
// base64 of its 4 big-endian bytes.
func encodeCRC32C(c uint32) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], c)
	return base64.StdEncoding.EncodeToString(b[:])
}

func decodeCRC32C(s string) (uint32, bool) {
	var b [4]byte
	if base64.StdEncoding.EncodedLen(4) != len(s) {
		return 0, false
	}
	if n, err := base64.StdEncoding.Decode(b[:], []byte(s)); err != nil || n != 4 {
		return 0, false
	}
	return binary.BigEndian.Uint32(b[:]), true
}
