package httpfront

import (
	"encoding/xml"
	"errors"
	"net/http"
	"strconv"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/mpu"
	"github.com/objup/objup/fakes/internal/store"
)

// XML API multipart uploads (cloud.google.com/storage/docs/multipart-uploads,
// compatible with Amazon S3's): the initiate, POST /BUCKET/OBJECT?uploads
// (xml.multipart.initiate); a part's upload, PUT
// /BUCKET/OBJECT?partNumber=N&uploadId=ID (xml.multipart.uploadPart); the
// complete, POST /BUCKET/OBJECT?uploadId=ID (xml.multipart.complete, see
// xml_complete.go); the abort, DELETE /BUCKET/OBJECT?uploadId=ID
// (xml.multipart.abort); the list of an upload's parts, GET
// /BUCKET/OBJECT?uploadId=ID (xml.multipart.listParts), and of a bucket's
// uploads, GET /BUCKET?uploads (xml.multipart.list; see xml_list.go).
// Package fakes/internal/mpu keeps the uploads and their rules; with a
// store on disk it keeps them, parts included, in files that survive a
// restart of the server, so that no part is held in memory.
//
// Where GCS's documents are silent the fake chooses, and says so here and
// in the doc comment of each call:
//
//   - the precondition headers (x-goog-if-generation-match and
//     x-goog-if-metageneration-match) on an initiate, a part's upload or a
//     complete are refused with 400 InvalidArgument: GCS documents that
//     preconditions are not supported in these requests, and a client
//     must not believe one protects its write;
//   - a complete counts as one object write against the bucket's write
//     capacity (WithCapacity), the initiate and the parts' uploads as
//     none; the list calls are reads;
//   - a complete of an upload that ended (completed or aborted) is 404
//     NoSuchUpload, as an unknown ID is: the request that completed it
//     was the one answered with the object;
//   - a request that names an upload with another bucket or object than
//     the upload's is 404 NoSuchUpload;
//   - an upload's parts are not visible in listings and count in no
//     tenant's usage; the object a complete stores counts as any object;
//   - deleting a bucket leaves its uploads in progress (GCS lets a bucket
//     with uploads in progress be deleted); their complete is then 404
//     NoSuchBucket;
//   - an upload never expires (GCS documents no limit to how long one may
//     stay unfinished): it lasts until its complete or its abort, and
//     [Server.MultipartUploads] lists those left.

// initiateResult is the answer of an initiate.
type initiateResult struct {
	XMLName  xml.Name `xml:"InitiateMultipartUploadResult"`
	NS       string   `xml:"xmlns,attr"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	UploadID string   `xml:"UploadId"`
}

// xmlInitiate serves the initiate of a multipart upload: the object's
// attributes come from its headers as for a PUT (xmlAttrs); it is
// answered with 200 and an InitiateMultipartUploadResult (Bucket, Key,
// UploadId) in S3's namespace. Nothing is checked against the live object
// then: a complete replaces it. It needs storage.multipartUploads.create
// and storage.objects.create.
func (s *Server) xmlInitiate(w http.ResponseWriter, r *http.Request, bkt, name string) error {
	if err := api.CheckObjectName(name); err != nil {
		return err
	}
	if _, err := s.xmlBucket(bkt, "an XML API multipart upload"); err != nil {
		return err
	}
	if err := noConditions(r.Header); err != nil {
		return err
	}
	a, err := xmlAttrs(r.Header)
	if err != nil {
		return err
	}
	u, err := s.MPU.Create(bkt, name, a)
	if err != nil {
		return err
	}
	writeXML(w, http.StatusOK, &initiateResult{NS: s3Namespace, Bucket: bkt, Key: name, UploadID: u.ID})
	return nil
}

// xmlUpload returns the upload id of the object name in bucket bkt, as a
// multipart call names them: NoSuchUpload if there is none in progress,
// or if it is another object's.
func (s *Server) xmlUpload(bkt, name, id string) (*mpu.Upload, error) {
	u, ok := s.MPU.Get(id)
	if !ok || u.Bucket != bkt || u.Object != name {
		return nil, mpu.ErrNoSuchUpload(id)
	}
	return u, nil
}

// xmlUploadPart serves a part's upload: partNumber from 1 to 10,000
// (else 400 InvalidArgument), a body of at most 5 GiB (else 400
// EntityTooLarge), whose declared digests (Content-MD5, x-goog-hash crc32c
// and md5) are checked as a PUT's (400 BadDigest or InvalidDigest). The
// part replaces one uploaded before under its number. It is answered with
// 200, the part's ETag (its MD5 in hex, quoted, as GCS and S3 answer) and
// its x-goog-hash (crc32c and md5). An upload that is not in progress is
// 404 NoSuchUpload, also when it ends while the part is on its way. A
// part is not an object write for the bucket's capacity.
func (s *Server) xmlUploadPart(w http.ResponseWriter, r *http.Request, bkt, name, id string) error {
	n, err := strconv.Atoi(r.URL.Query().Get("partNumber"))
	if err != nil || n < 1 || n > mpu.MaxPartNumber {
		return store.Errorf(store.KindInvalid, "Part number must be an integer between 1 and %d, inclusive; not %q.", mpu.MaxPartNumber, r.URL.Query().Get("partNumber"))
	}
	u, err := s.xmlUpload(bkt, name, id)
	if err != nil {
		return err
	}
	if err := noConditions(r.Header); err != nil {
		return err
	}
	d, err := readDigests(r.Header)
	if err != nil {
		return err
	}
	p, err := u.Put(n, r.Body, r.ContentLength, func(p *mpu.Part) error { return d.check(p.CRC32C, p.MD5) })
	if errors.Is(err, mpu.ErrBodyEnded) {
		return bodyError(r, err)
	}
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("ETag", p.ETag())
	h.Add("X-Goog-Hash", "crc32c="+encodeCRC32C(p.CRC32C))
	h.Add("X-Goog-Hash", "md5="+encodeMD5(p.MD5[:]))
	h.Set("Content-Length", "0")
	lowerGoogHeaders(h)
	w.WriteHeader(http.StatusOK)
	return nil
}

// xmlAbort serves the abort of a multipart upload: its parts are dropped,
// and it is answered with 204. An upload that is not in progress is 404
// NoSuchUpload.
func (s *Server) xmlAbort(w http.ResponseWriter, bkt, name, id string) error {
	u, err := s.xmlUpload(bkt, name, id)
	if err != nil {
		return err
	}
	if err := u.Abort(); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
