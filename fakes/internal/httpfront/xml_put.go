package httpfront

import (
	"crypto/md5"
	"hash/crc32"
	"net/http"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/core"
	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/header"
	"github.com/objup/objup/internal/crc32c"
)

// xmlPutObject serves the XML API's simple upload, PUT /BUCKET/OBJECT
// (xml.objects.put): the body is the object, its attributes come from the
// request's headers (xmlAttrs), x-goog-if-generation-match and
// x-goog-if-metageneration-match are its preconditions (checked
// atomically with the write: 412 PreconditionFailed), and the digests it
// declares (Content-MD5, x-goog-hash crc32c and md5) are checked against
// the body: a mismatch is 400 BadDigest, a malformed digest 400
// InvalidDigest, and either stores nothing, as does a body that ends
// before its Content-Length. The object gets a CRC32C and an MD5. It is
// answered with 200, an empty body, and the object's ETag (its MD5 in
// hex, quoted), x-goog-generation, x-goog-metageneration, x-goog-hash
// (crc32c and md5, one header each) and x-goog-stored-content-length. One
// PUT is one object write against the bucket's capacity; a role without
// storage.objects.delete cannot overwrite (403 AccessDenied).
func (s *Server) xmlPutObject(w http.ResponseWriter, r *http.Request, bkt, name string) error {
	if err := api.CheckObjectName(name); err != nil {
		return err
	}
	b, err := s.xmlBucket(bkt, "an XML API upload")
	if err != nil {
		return err
	}
	cond, err := xmlConditions(r.Header)
	if err != nil {
		return err
	}
	a, err := xmlAttrs(r.Header)
	if err != nil {
		return err
	}
	d, err := readDigests(r.Header)
	if err != nil {
		return err
	}
	if err := s.admitHTTP(r, bkt, name); err != nil {
		return err
	}
	parts, err := readParts(r.Body, r.ContentLength)
	if err != nil {
		return bodyError(r, err)
	}
	c := store.Content{Parts: parts, HasMD5: true}
	h := md5.New()
	for _, p := range parts {
		c.CRC32C = crc32.Update(c.CRC32C, crc32c.Table, p)
		h.Write(p)
		c.Size += int64(len(p))
	}
	h.Sum(c.MD5[:0])
	if err := d.check(c.CRC32C, c.MD5); err != nil {
		return err
	}
	if err := s.Commits.Commit(r.Context()); err != nil {
		return err
	}
	o, err := b.Put(name, a, c, core.OverwriteCond(r.Context(), cond), lastValue(r.Header, header.TenantKey))
	if err != nil {
		return err
	}
	objectHeaders(w.Header(), o)
	w.Header().Set("Content-Length", "0")
	lowerGoogHeaders(w.Header())
	w.WriteHeader(http.StatusOK)
	return nil
}

// bodyError is the error of an XML API upload whose body could not be
// read whole: the break of a BreakStream rule (see xml_faults.go), or
// IncompleteBody.
func bodyError(r *http.Request, err error) error {
	if b, ok := r.Body.(*faultBody); ok && b.cut != nil {
		return b.cut
	}
	return store.Errorf(kindIncompleteBody, "You did not provide the number of bytes specified by the Content-Length HTTP header: %v", err)
}
