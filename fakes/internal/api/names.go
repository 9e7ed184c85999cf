package api

import (
	"encoding/base64"
	"encoding/binary"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/internal/wire"
)

// BucketPrefix starts a bucket's resource name, "projects/_/buckets/NAME".
const BucketPrefix = "projects/_/buckets/"

// ParseBucket turns "projects/_/buckets/NAME" (any project) into NAME.
func ParseBucket(resource string) (string, error) {
	rest, ok := strings.CutPrefix(resource, "projects/")
	project, name, ok2 := strings.Cut(rest, "/buckets/")
	if !ok || !ok2 || project == "" || strings.Contains(project, "/") || name == "" || strings.Contains(name, "/") {
		return "", status.Errorf(codes.InvalidArgument, "bucket %q is not a bucket resource name like %q", resource, BucketPrefix+"NAME")
	}
	return name, nil
}

// CheckObjectName applies the GCS object naming rules.
func CheckObjectName(name string) error {
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

// CheckCommon rejects customer-supplied encryption keys, which the fake does
// not implement.
func CheckCommon(p *wire.CommonObjectRequestParams) error {
	if p.GetEncryptionAlgorithm() != "" || len(p.GetEncryptionKeyBytes()) > 0 {
		return status.Error(codes.Unimplemented, "customer-supplied encryption keys are not supported by the fake")
	}
	return nil
}

// ObjectETag is an object's ETag as GCS forms it: base64 of a small message
// holding the generation (field 1) and the metageneration (field 2).
func ObjectETag(gen, meta int64) string {
	b := make([]byte, 0, 24)
	b = append(b, 0x08)
	b = binary.AppendUvarint(b, uint64(gen))
	b = append(b, 0x10)
	b = binary.AppendUvarint(b, uint64(meta))
	return base64.StdEncoding.EncodeToString(b)
}

// NameList is a command-line flag of names (flag.Value) that may be
// repeated and also takes a comma-separated list: the fake's and the
// sink's -zonal-bucket.
type NameList []string

// String returns the names, comma-separated.
func (l *NameList) String() string { return strings.Join(*l, ",") }

// Set adds the names of v, separated by commas; empty ones are skipped.
func (l *NameList) Set(v string) error {
	for n := range strings.SplitSeq(v, ",") {
		if n = strings.TrimSpace(n); n != "" {
			*l = append(*l, n)
		}
	}
	return nil
}
