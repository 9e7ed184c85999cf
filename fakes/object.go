package fakes

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/objup/objup/internal/wire"
)

// maxChunk is the service's limit on the content of one message, both ways
// (MAX_WRITE_CHUNK_BYTES and MAX_READ_CHUNK_BYTES).
const maxChunk = 2 << 20

// timestampFormat is how fake-gcs-server's backend stores times.
const timestampFormat = "2006-01-02T15:04:05.999999Z07:00"

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

// checkBucket parses a bucket resource name and checks that the bucket exists.
func (s *Server) checkBucket(resource string) (string, error) {
	name, err := parseBucket(resource)
	if err != nil {
		return "", err
	}
	if _, err := s.fs.Backend().GetBucket(name); err != nil {
		return "", status.Errorf(codes.NotFound, "bucket %q not found", name)
	}
	return name, nil
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

// metageneration is the metageneration of every object: the fake's store
// does not track metadata updates.
const metageneration = 1

// preconditions are a request's if_* fields. It is also the
// fake-gcs-server backend's Conditions, so a write checks them atomically
// with the store.
type preconditions struct {
	genMatch, genNotMatch, metaMatch, metaNotMatch *int64

	err error // why ConditionsMet last failed
}

// check evaluates the preconditions against the live object (gen 0: none).
func (p *preconditions) check(gen int64) error {
	exists := gen != 0
	switch {
	case p.genMatch != nil && *p.genMatch != gen:
		if *p.genMatch == 0 {
			return status.Errorf(codes.FailedPrecondition, "precondition failed: if_generation_match=0 but the object exists (generation %d)", gen)
		}
		return status.Errorf(codes.FailedPrecondition, "precondition failed: if_generation_match=%d, live generation is %d", *p.genMatch, gen)
	case p.genNotMatch != nil && exists && *p.genNotMatch == gen:
		return status.Errorf(codes.FailedPrecondition, "precondition failed: if_generation_not_match=%d is the live generation", gen)
	case p.metaMatch != nil && (!exists || *p.metaMatch != metageneration):
		return status.Errorf(codes.FailedPrecondition, "precondition failed: if_metageneration_match=%d, object %s", *p.metaMatch, describeMeta(exists))
	case p.metaNotMatch != nil && exists && *p.metaNotMatch == metageneration:
		return status.Errorf(codes.FailedPrecondition, "precondition failed: if_metageneration_not_match=%d is the live metageneration", metageneration)
	}
	return nil
}

func describeMeta(exists bool) string {
	if exists {
		return "has metageneration 1"
	}
	return "does not exist"
}

// ConditionsMet implements the fake-gcs-server backend's Conditions.
func (p *preconditions) ConditionsMet(activeGeneration int64) bool {
	p.err = p.check(activeGeneration)
	return p.err == nil
}

// lookup returns the live object, or the given generation.
func (s *Server) lookup(bucket, name string, generation int64) (fakestorage.StreamingObject, error) {
	var (
		obj fakestorage.StreamingObject
		err error
	)
	if generation != 0 {
		obj, err = s.fs.GetObjectWithGenerationStreaming(bucket, name, generation)
	} else {
		obj, err = s.fs.GetObjectStreaming(bucket, name)
	}
	if err != nil {
		if generation != 0 {
			return obj, status.Errorf(codes.NotFound, "object %q generation %d not found in bucket %q", name, generation, bucket)
		}
		return obj, status.Errorf(codes.NotFound, "object %q not found in bucket %q", name, bucket)
	}
	return obj, nil
}

// toObject converts fake-gcs-server's attributes into the API's Object.
func toObject(a *fakestorage.ObjectAttrs) *wire.Object {
	o := &wire.Object{
		Name:               a.Name,
		Bucket:             bucketPrefix + a.BucketName,
		Generation:         a.Generation,
		Metageneration:     metageneration,
		StorageClass:       a.StorageClass,
		Size:               a.Size,
		ContentEncoding:    a.ContentEncoding,
		ContentDisposition: a.ContentDisposition,
		CacheControl:       a.CacheControl,
		ContentLanguage:    a.ContentLanguage,
		ContentType:        a.ContentType,
		CreateTime:         timestamp(a.Created),
		UpdateTime:         timestamp(a.Updated),
		FinalizeTime:       timestamp(a.Created),
		CustomTime:         timestamp(a.CustomTime),
		Metadata:           a.Metadata,
		Etag:               a.Etag,
		Checksums:          &wire.ObjectChecksums{},
	}
	if c, ok := decodeCRC32C(a.Crc32c); ok {
		o.Checksums.Crc32C = &c
	}
	if m, err := base64.StdEncoding.DecodeString(a.Md5Hash); err == nil && len(m) > 0 {
		o.Checksums.Md5Hash = m
	}
	return o
}

func timestamp(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
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

// zeroResult returns the zero value of f's first result. It names
// fake-gcs-server's internal object type without importing it (Go forbids
// importing an internal package, not using its values), so writes can go to
// the backend directly: with precomputed checksums, and with preconditions
// checked under the backend's lock.
func zeroResult[T any](f func(string, string) (T, error)) (zero T) { return zero }

// chunkReader reads the chunks of an upload in sequence, without joining
// them first.
type chunkReader struct {
	chunks [][]byte
	i      int   // current chunk
	off    int   // offset in the current chunk
	pos    int64 // absolute offset
	size   int64
}

func newChunkReader(chunks [][]byte, size int64) *chunkReader {
	return &chunkReader{chunks: chunks, size: size}
}

func (r *chunkReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && r.i < len(r.chunks) {
		c := copy(p[n:], r.chunks[r.i][r.off:])
		n += c
		r.off += c
		if r.off == len(r.chunks[r.i]) {
			r.i++
			r.off = 0
		}
	}
	r.pos += int64(n)
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (r *chunkReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += r.pos
	case io.SeekEnd:
		offset += r.size
	}
	if offset < 0 {
		return r.pos, errors.New("fakes: negative seek")
	}
	r.i, r.off, r.pos = 0, 0, offset
	rest := offset
	for r.i < len(r.chunks) && rest >= int64(len(r.chunks[r.i])) {
		rest -= int64(len(r.chunks[r.i]))
		r.i++
	}
	if r.i < len(r.chunks) {
		r.off = int(rest)
	}
	return offset, nil
}

func (r *chunkReader) Close() error { return nil }
