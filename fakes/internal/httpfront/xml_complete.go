package httpfront

import (
	"encoding/base64"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"

	"github.com/objup/objup/fakes/internal/core"
	"github.com/objup/objup/fakes/internal/mpu"
	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/header"
)

// maxCompleteBody bounds the body of a complete: 10,000 parts of about a
// hundred bytes each.
const maxCompleteBody = 4 << 20

// completeRequest is the body of a complete.
type completeRequest struct {
	XMLName xml.Name `xml:"CompleteMultipartUpload"`
	Parts   []struct {
		PartNumber int    `xml:"PartNumber"`
		ETag       string `xml:"ETag"`
	} `xml:"Part"`
}

// completeResult is the answer of a complete.
type completeResult struct {
	XMLName  xml.Name `xml:"CompleteMultipartUploadResult"`
	NS       string   `xml:"xmlns,attr"`
	Location string   `xml:"Location"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	ETag     string   `xml:"ETag"`
}

// xmlComplete serves the complete of a multipart upload: its body, a
// CompleteMultipartUpload document (in S3's namespace or none), names
// parts by PartNumber and ETag (quoted or not), in strictly ascending
// order (else 400 InvalidPartOrder), each uploaded with that ETag (else
// 400 InvalidPart), every part but the last of at least 5 MiB (else 400
// EntityTooSmall); a body that is not such a document, or names no part,
// is 400 MalformedXML. It stores one object, a new generation that
// replaces the live one, of the parts' bytes one after the other, with the
// attributes the initiate gave, a CRC32C (combined from the parts') and,
// as GCS documents, no MD5 and an ETag not based on one (the fake's is the
// object's JSON API ETag); GCS's documents do not say it sets
// componentCount, and the fake does not. The parts not named are dropped
// with the others, and the upload then no longer exists: a second
// complete, like an abort, is 404 NoSuchUpload. A complete that fails
// (bad parts, a refused overwrite, the bucket's capacity) leaves the
// upload as it was.
//
// The answer is 200 with a CompleteMultipartUploadResult (Location,
// Bucket, Key, ETag). GCS's documents say nothing of its headers; the
// fake sends the object's x-goog-generation, x-goog-metageneration,
// x-goog-hash (its CRC32C) and x-goog-stored-content-length, which a
// client may use to know what it stored (objup's uploader uses
// x-goog-generation and x-goog-hash when present).
//
// It needs storage.multipartUploads.create and storage.objects.create,
// and storage.objects.delete to replace a live object (403 AccessDenied
// without). It is one object write against the bucket's capacity, and
// waits the commit delays (WithCommitDelay) as any write that stores an
// object.
func (s *Server) xmlComplete(w http.ResponseWriter, r *http.Request, rt *HTTPRoute, id string) error {
	bkt, name := rt.bucket, rt.object
	u, err := s.xmlUpload(bkt, name, id)
	if err != nil {
		return err
	}
	if err := noConditions(r.Header); err != nil {
		return err
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxCompleteBody+1))
	if err != nil {
		return bodyError(r, err)
	}
	var req completeRequest
	if err := xml.Unmarshal(body, &req); err != nil || len(body) > maxCompleteBody {
		return store.Errorf(kindMalformedXML, "The XML you provided was not well-formed or did not validate against the CompleteMultipartUpload schema: %v", err)
	}
	if len(req.Parts) == 0 {
		return store.Errorf(kindMalformedXML, "The XML you provided names no part: a CompleteMultipartUpload needs at least one Part.")
	}
	refs := make([]mpu.Ref, len(req.Parts))
	for i, p := range req.Parts {
		refs[i] = mpu.Ref{Number: p.PartNumber, ETag: p.ETag}
	}
	b, err := s.Store.Bucket(bkt)
	if err != nil {
		return store.Errorf(kindNoSuchBucket, "The specified bucket %q does not exist.", bkt)
	}
	var o *store.Object
	err = u.Complete(refs, func(c store.Content) error {
		// One write, judged once the parts were found good.
		if err := s.admitHTTP(r, bkt, name); err != nil {
			return err
		}
		if err := s.Commits.Commit(r.Context()); err != nil {
			return err
		}
		var err error
		o, err = b.Put(name, u.Attrs, c, core.OverwriteCond(r.Context(), nil), lastValue(r.Header, header.TenantKey))
		return err
	})
	if err != nil {
		return err
	}
	objectHeaders(w.Header(), o)
	writeXML(w, http.StatusOK, &completeResult{NS: s3Namespace,
		Location: baseURL(r) + "/" + url.PathEscape(bkt) + "/" + url.PathEscape(name),
		Bucket:   bkt, Key: name, ETag: objectETag(o)})
	return nil
}

// encodeMD5 is the base64 form of an MD5, as x-goog-hash carries it.
func encodeMD5(sum []byte) string { return base64.StdEncoding.EncodeToString(sum) }
