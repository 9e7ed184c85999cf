package httpfront

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/store"
)

// What the XML API's writes (PUT and the multipart calls) share: the
// object's attributes from the request's headers, the digests a request
// declares, and the errors and documents of the XML API.

// The XML API's errors that the store's kinds do not give, by their XML
// error code (the Kind's Reason; writeXMLError answers a Reason that is a
// code as it is).
var (
	// kindBadDigest: a body whose MD5 (Content-MD5, x-goog-hash md5=) or
	// CRC32C (x-goog-hash crc32c=) is not the one declared.
	kindBadDigest = store.Kind{Code: codes.DataLoss, HTTP: http.StatusBadRequest, Reason: "BadDigest"}
	// kindInvalidDigest: a declared digest that is not the base64 of one.
	kindInvalidDigest = store.Kind{Code: codes.InvalidArgument, HTTP: http.StatusBadRequest, Reason: "InvalidDigest"}
	kindMalformedXML  = store.Kind{Code: codes.InvalidArgument, HTTP: http.StatusBadRequest, Reason: "MalformedXML"}
	kindNoSuchBucket  = store.Kind{Code: codes.NotFound, HTTP: http.StatusNotFound, Reason: "NoSuchBucket"}
	// kindIncompleteBody: a body that ended before its Content-Length.
	kindIncompleteBody = store.Kind{Code: codes.InvalidArgument, HTTP: http.StatusBadRequest, Reason: "IncompleteBody"}
)

// s3Namespace is the namespace of the XML API's multipart documents, S3's.
const s3Namespace = "http://s3.amazonaws.com/doc/2006-03-01/"

// xmlBucket returns bucket bkt for an XML API request that writes an
// object: NoSuchBucket if it does not exist, InvalidArgument if it is
// zonal (which takes appendable writes only, as for the JSON API).
func (s *Server) xmlBucket(bkt, what string) (*store.Bucket, error) {
	b, err := s.Store.Bucket(bkt)
	if err != nil {
		return nil, store.Errorf(kindNoSuchBucket, "The specified bucket %q does not exist.", bkt)
	}
	if b.Zonal() {
		return nil, store.ErrZonal(bkt, what)
	}
	return b, nil
}

// xmlConditions reads the x-goog-if-generation-match and
// x-goog-if-metageneration-match headers; nil if neither is set.
func xmlConditions(h http.Header) (*store.Conditions, error) {
	var cond *store.Conditions
	for _, c := range []struct {
		key string
		dst func(c *store.Conditions, v *int64)
	}{
		{"X-Goog-If-Generation-Match", func(c *store.Conditions, v *int64) { c.GenMatch = v }},
		{"X-Goog-If-Metageneration-Match", func(c *store.Conditions, v *int64) { c.MetaMatch = v }},
	} {
		v := h.Get(c.key)
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, store.Errorf(store.KindInvalid, "%s %q is not a number", c.key, v)
		}
		if cond == nil {
			cond = &store.Conditions{}
		}
		c.dst(cond, &n)
	}
	return cond, nil
}

// noConditions refuses the precondition headers on a multipart upload's
// requests: GCS documents that "Preconditions are not supported in the
// requests" of XML API multipart uploads, and the fake says so rather
// than let a client believe a precondition protects its write.
func noConditions(h http.Header) error {
	for _, k := range []string{"X-Goog-If-Generation-Match", "X-Goog-If-Metageneration-Match"} {
		if h.Get(k) != "" {
			return store.Errorf(store.KindInvalid, "%s: preconditions are not supported in XML API multipart uploads", k)
		}
	}
	return nil
}

// xmlAttrs reads an object's attributes from the headers of an XML API
// upload (PUT, or the initiate of a multipart upload): Content-Type,
// Cache-Control, Content-Disposition, Content-Encoding, Content-Language,
// x-goog-storage-class, x-goog-custom-time (RFC 3339) and the custom
// metadata of the x-goog-meta-* headers, whose keys are kept in lower case
// (HTTP header names have no case). x-goog-acl is taken and ignored, as
// the JSON API's uploads ignore predefinedAcl; customer-supplied and KMS
// encryption keys are not implemented.
func xmlAttrs(h http.Header) (store.Attrs, error) {
	a := store.Attrs{
		ContentType:        h.Get("Content-Type"),
		CacheControl:       h.Get("Cache-Control"),
		ContentDisposition: h.Get("Content-Disposition"),
		ContentEncoding:    h.Get("Content-Encoding"),
		ContentLanguage:    h.Get("Content-Language"),
		StorageClass:       strings.ToUpper(h.Get("X-Goog-Storage-Class")),
	}
	if v := h.Get("X-Goog-Custom-Time"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return a, store.Errorf(store.KindInvalid, "x-goog-custom-time %q is not an RFC 3339 time", v)
		}
		a.CustomTime = t.UnixMicro()
	}
	for k, v := range h {
		lk := strings.ToLower(k)
		switch {
		case strings.HasPrefix(lk, "x-goog-meta-") && len(lk) > len("x-goog-meta-"):
			if a.Metadata == nil {
				a.Metadata = make(map[string]string)
			}
			a.Metadata[strings.TrimPrefix(lk, "x-goog-meta-")] = v[len(v)-1]
		case strings.HasPrefix(lk, "x-goog-encryption-") && v[len(v)-1] != "":
			return a, store.Errorf(store.KindUnimplemented, "fakes: %s (customer-supplied or KMS encryption keys) is not implemented by the fake", k)
		}
	}
	return a, nil
}

// digests are the checksums a request declares for its body: Content-MD5,
// and x-goog-hash's crc32c and md5 ("crc32c=B64,md5=B64", in one header
// or several).
type digests struct {
	md5s [][]byte // each MD5 declared, Content-MD5's first
	crc  *uint32
}

// readDigests reads the digests h declares; a value that is not the base64
// of a digest is InvalidDigest.
func readDigests(h http.Header) (digests, error) {
	var d digests
	bad := func(what, v string) error {
		return store.Errorf(kindInvalidDigest, "The %s you specified, %q, is not valid: want the base64 of its bytes.", what, v)
	}
	if v := h.Get("Content-MD5"); v != "" {
		m, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
		if err != nil || len(m) != md5.Size {
			return d, bad("Content-MD5", v)
		}
		d.md5s = append(d.md5s, m)
	}
	for _, line := range h.Values("X-Goog-Hash") {
		for kv := range strings.SplitSeq(line, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			switch {
			case !ok:
			case k == "md5":
				m, err := base64.StdEncoding.DecodeString(v)
				if err != nil || len(m) != md5.Size {
					return d, bad("x-goog-hash md5", v)
				}
				d.md5s = append(d.md5s, m)
			case k == "crc32c":
				c, ok := decodeCRC32C(v)
				if !ok {
					return d, bad("x-goog-hash crc32c", v)
				}
				d.crc = &c
			}
		}
	}
	return d, nil
}

// check compares the digests with those of a body; a mismatch is BadDigest.
func (d digests) check(crc uint32, sum [md5.Size]byte) error {
	for _, m := range d.md5s {
		if !bytes.Equal(m, sum[:]) {
			return store.Errorf(kindBadDigest, "The MD5 you specified did not match what was received: declared %s, computed %s.",
				base64.StdEncoding.EncodeToString(m), base64.StdEncoding.EncodeToString(sum[:]))
		}
	}
	if d.crc != nil && *d.crc != crc {
		return store.Errorf(kindBadDigest, "The CRC32C you specified did not match what was received: declared %s, computed %s.",
			encodeCRC32C(*d.crc), encodeCRC32C(crc))
	}
	return nil
}

// lowerGoogHeaders writes the names of the x-goog-* headers of an XML API
// response in lower case, as GCS sends them: boto (under gsutil's XML
// mode) reads x-goog-hash, x-goog-generation and the others by their
// lower-case names only. Call it last, before WriteHeader: http.Header's
// Get no longer finds them.
func lowerGoogHeaders(h http.Header) {
	for k, v := range h {
		if strings.HasPrefix(k, "X-Goog-") {
			delete(h, k)
			h[strings.ToLower(k)] = v
		}
	}
}

// writeXML writes v as the XML body of a response with status st.
func writeXML(w http.ResponseWriter, st int, v any) {
	b, err := xml.Marshal(v)
	if err != nil {
		writeXMLError(w, http.StatusInternalServerError, "", err.Error())
		return
	}
	b = append([]byte(xml.Header), b...)
	h := w.Header()
	h.Set("Content-Type", "application/xml; charset=UTF-8")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	lowerGoogHeaders(h)
	w.WriteHeader(st)
	w.Write(b)
}

// objectHeaders sets the headers the XML API answers a write with: the
// object's generation, metageneration, stored size and x-goog-hash (its
// CRC32C, and its MD5 if it has one), and its ETag (its MD5 in hex if it
// has one, as GCS's XML API answers, else its JSON API ETag).
func objectHeaders(h http.Header, o *store.Object) {
	h.Set("X-Goog-Generation", strconv.FormatInt(o.Generation(), 10))
	h.Set("X-Goog-Metageneration", strconv.FormatInt(o.Metageneration(), 10))
	h.Set("X-Goog-Stored-Content-Length", strconv.FormatInt(o.Size(), 10))
	h.Add("X-Goog-Hash", "crc32c="+encodeCRC32C(o.CRC32C()))
	if o.HasMD5() {
		h.Add("X-Goog-Hash", "md5="+md5Text(o))
	}
	h.Set("ETag", objectETag(o))
}

// objectETag is an object's ETag in the XML API's answers to its writes:
// its MD5 in hex, quoted, or, for an object without one (a multipart
// upload's), its JSON API ETag, quoted.
func objectETag(o *store.Object) string {
	if o.HasMD5() {
		return `"` + hex.EncodeToString(o.MD5()) + `"`
	}
	return `"` + api.ObjectETag(o.Generation(), o.Metageneration()) + `"`
}
