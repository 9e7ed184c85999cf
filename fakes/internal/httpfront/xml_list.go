package httpfront

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/objup/objup/fakes/internal/mpu"
	"github.com/objup/objup/fakes/internal/store"
)

// The XML API's lists of multipart uploads: an upload's parts
// (xml.multipart.listParts) and a bucket's uploads in progress
// (xml.multipart.list), at most 1,000 entries a page, as GCS documents.

// maxListXML is the most entries a page of an XML API list holds.
const maxListXML = 1000

// xmlTime is the XML API's form of a time.
func xmlTime(us int64) string {
	return time.UnixMicro(us).UTC().Format("2006-01-02T15:04:05.000Z")
}

// listPartsResult is the answer of a list of parts.
type listPartsResult struct {
	XMLName              xml.Name `xml:"ListPartsResult"`
	NS                   string   `xml:"xmlns,attr"`
	Bucket               string   `xml:"Bucket"`
	Key                  string   `xml:"Key"`
	UploadID             string   `xml:"UploadId"`
	StorageClass         string   `xml:"StorageClass"`
	PartNumberMarker     int      `xml:"PartNumberMarker"`
	NextPartNumberMarker int      `xml:"NextPartNumberMarker,omitempty"`
	MaxParts             int      `xml:"MaxParts"`
	IsTruncated          bool     `xml:"IsTruncated"`
	Parts                []xmlPart
}

type xmlPart struct {
	XMLName      xml.Name `xml:"Part"`
	PartNumber   int      `xml:"PartNumber"`
	LastModified string   `xml:"LastModified"`
	ETag         string   `xml:"ETag"`
	Size         int64    `xml:"Size"`
}

// queryCount reads a count parameter of an XML API list: absent is
// maxListXML, more is maxListXML, a negative number or other text is 400
// InvalidArgument.
func queryCount(q url.Values, key string) (int, error) {
	v := q.Get(key)
	if v == "" {
		return maxListXML, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, store.Errorf(store.KindInvalid, "Argument %s must be an integer between 0 and 2147483647, not %q.", key, v)
	}
	return min(n, maxListXML), nil
}

// xmlListParts serves the list of an upload's parts: in the order of their
// numbers, those after part-number-marker, at most max-parts of them (and
// at most 1,000), with IsTruncated and NextPartNumberMarker when more
// follow. An upload that is not in progress is 404 NoSuchUpload. It needs
// storage.multipartUploads.listParts.
func (s *Server) xmlListParts(w http.ResponseWriter, r *http.Request, bkt, name, id string) error {
	q := r.URL.Query()
	max, err := queryCount(q, "max-parts")
	if err != nil {
		return err
	}
	marker := 0
	if v := q.Get("part-number-marker"); v != "" {
		if marker, err = strconv.Atoi(v); err != nil || marker < 0 {
			return store.Errorf(store.KindInvalid, "Argument part-number-marker must be an integer between 0 and 2147483647, not %q.", v)
		}
	}
	u, err := s.xmlUpload(bkt, name, id)
	if err != nil {
		return err
	}
	parts, ok := u.Parts()
	if !ok {
		return mpu.ErrNoSuchUpload(id)
	}
	res := &listPartsResult{NS: s3Namespace, Bucket: bkt, Key: name, UploadID: id, StorageClass: storageClassOf(u.Attrs),
		PartNumberMarker: marker, MaxParts: max}
	for _, p := range parts {
		if p.Number <= marker {
			continue
		}
		if len(res.Parts) == max {
			res.IsTruncated = true
			break
		}
		res.Parts = append(res.Parts, xmlPart{PartNumber: p.Number, LastModified: xmlTime(p.Modified), ETag: p.ETag(), Size: p.Size})
		res.NextPartNumberMarker = p.Number
	}
	writeXML(w, http.StatusOK, res)
	return nil
}

// storageClassOf is the storage class of an object with the attributes a.
func storageClassOf(a store.Attrs) string {
	if a.StorageClass == "" {
		return store.DefaultStorageClass
	}
	return a.StorageClass
}

// listUploadsResult is the answer of a list of uploads.
type listUploadsResult struct {
	XMLName            xml.Name `xml:"ListMultipartUploadsResult"`
	NS                 string   `xml:"xmlns,attr"`
	Bucket             string   `xml:"Bucket"`
	KeyMarker          string   `xml:"KeyMarker"`
	UploadIDMarker     string   `xml:"UploadIdMarker"`
	NextKeyMarker      string   `xml:"NextKeyMarker,omitempty"`
	NextUploadIDMarker string   `xml:"NextUploadIdMarker,omitempty"`
	EncodingType       string   `xml:"EncodingType,omitempty"`
	Prefix             string   `xml:"Prefix"`
	MaxUploads         int      `xml:"MaxUploads"`
	IsTruncated        bool     `xml:"IsTruncated"`
	Uploads            []xmlUploadEntry
}

type xmlUploadEntry struct {
	XMLName      xml.Name `xml:"Upload"`
	Key          string   `xml:"Key"`
	UploadID     string   `xml:"UploadId"`
	StorageClass string   `xml:"StorageClass"`
	Initiated    string   `xml:"Initiated"`
}

// xmlListUploads serves the list of a bucket's uploads in progress: in the
// order of their object names, then of their initiation; those whose names
// start with prefix; from after key-marker (with upload-id-marker, after
// that upload of key-marker); at most max-uploads of them (and at most
// 1,000), with IsTruncated, NextKeyMarker and NextUploadIdMarker when more
// follow; with encoding-type=url, object names URL-encoded. delimiter is
// not implemented (501). A bucket that does not exist is 404
// NoSuchBucket. It needs storage.multipartUploads.list.
func (s *Server) xmlListUploads(w http.ResponseWriter, r *http.Request, bkt string) error {
	q := r.URL.Query()
	if q.Get("delimiter") != "" {
		return store.Errorf(store.KindUnimplemented, "fakes: the delimiter of a list of multipart uploads is not implemented by the fake")
	}
	max, err := queryCount(q, "max-uploads")
	if err != nil {
		return err
	}
	enc := q.Get("encoding-type")
	if enc != "" && enc != "url" {
		return store.Errorf(store.KindInvalid, "Invalid encoding-type %q: the only one is url.", enc)
	}
	if _, err := s.Store.Bucket(bkt); err != nil {
		return store.Errorf(kindNoSuchBucket, "The specified bucket %q does not exist.", bkt)
	}
	name := func(s string) string {
		if enc == "url" {
			return url.QueryEscape(s)
		}
		return s
	}
	prefix, keyMarker, idMarker := q.Get("prefix"), q.Get("key-marker"), q.Get("upload-id-marker")
	ups, more := s.MPU.List(bkt, prefix, keyMarker, idMarker, max)
	res := &listUploadsResult{NS: s3Namespace, Bucket: bkt, KeyMarker: name(keyMarker), UploadIDMarker: idMarker,
		EncodingType: enc, Prefix: name(prefix), MaxUploads: max, IsTruncated: more}
	for _, u := range ups {
		res.Uploads = append(res.Uploads, xmlUploadEntry{Key: name(u.Object), UploadID: u.ID,
			StorageClass: storageClassOf(u.Attrs), Initiated: xmlTime(u.Initiated)})
	}
	if more && len(ups) > 0 {
		last := ups[len(ups)-1]
		res.NextKeyMarker, res.NextUploadIDMarker = name(last.Object), last.ID
	}
	writeXML(w, http.StatusOK, res)
	return nil
}
