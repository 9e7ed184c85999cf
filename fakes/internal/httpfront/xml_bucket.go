package httpfront

import (
	"encoding/xml"
	"net/http"
	"net/url"

	"github.com/objup/objup/fakes/internal/store"
)

// listBucketResult is the answer of the XML API's list of a bucket's
// objects, in the namespace GCS answers it in.
type listBucketResult struct {
	XMLName        xml.Name `xml:"ListBucketResult"`
	NS             string   `xml:"xmlns,attr"`
	Name           string   `xml:"Name"`
	Prefix         string   `xml:"Prefix"`
	Marker         string   `xml:"Marker"`
	NextMarker     string   `xml:"NextMarker,omitempty"`
	Delimiter      string   `xml:"Delimiter,omitempty"`
	MaxKeys        int      `xml:"MaxKeys"`
	IsTruncated    bool     `xml:"IsTruncated"`
	Contents       []xmlObjectEntry
	CommonPrefixes []xmlPrefix
}

type xmlObjectEntry struct {
	XMLName        xml.Name `xml:"Contents"`
	Key            string   `xml:"Key"`
	Generation     int64    `xml:"Generation"`
	MetaGeneration int64    `xml:"MetaGeneration"`
	LastModified   string   `xml:"LastModified"`
	ETag           string   `xml:"ETag"`
	Size           int64    `xml:"Size"`
	StorageClass   string   `xml:"StorageClass"`
}

type xmlPrefix struct {
	XMLName xml.Name `xml:"CommonPrefixes"`
	Prefix  string   `xml:"Prefix"`
}

// xmlListObjects serves the XML API's list of a bucket's live objects,
// GET /BUCKET (xml.objects.list), as gsutil's XML mode lists a
// destination before it copies: in name order, those whose names start
// with prefix and come after marker, rolled up at delimiter into
// CommonPrefixes, at most max-keys entries (objects and prefixes, and at
// most 1,000), with IsTruncated and NextMarker when more follow; with
// encoding-type=url, names URL-encoded. Version listings (versions) and
// the list of version 2 (list-type=2) are not implemented (501). It needs
// storage.objects.list.
func (s *Server) xmlListObjects(w http.ResponseWriter, r *http.Request, bkt string) error {
	q := r.URL.Query()
	if q.Has("versions") || q.Get("list-type") != "" {
		return store.Errorf(store.KindUnimplemented, "fakes: the XML API's list of versions and list-type=2 are not implemented by the fake")
	}
	limit, err := queryCount(q, "max-keys")
	if err != nil {
		return err
	}
	enc := q.Get("encoding-type")
	if enc != "" && enc != "url" {
		return store.Errorf(store.KindInvalid, "Invalid encoding-type %q: the only one is url.", enc)
	}
	b, err := s.Store.Bucket(bkt)
	if err != nil {
		return store.Errorf(kindNoSuchBucket, "The specified bucket %q does not exist.", bkt)
	}
	name := func(s string) string {
		if enc == "url" {
			return url.QueryEscape(s)
		}
		return s
	}
	prefix, delim, marker := q.Get("prefix"), q.Get("delimiter"), q.Get("marker")
	res := &listBucketResult{NS: "http://doc.s3.amazonaws.com/2006-03-01", Name: bkt, Prefix: name(prefix),
		Marker: name(marker), Delimiter: name(delim), MaxKeys: limit}
	if limit > 0 {
		lq := &store.ListQuery{Prefix: prefix, Delimiter: delim, PageSize: limit}
		if marker != "" {
			lq.StartOffset = marker + "\x00" // the names after marker
		}
		page, err := b.List(lq)
		if err != nil {
			return err
		}
		last := ""
		for _, o := range page.Objects {
			res.Contents = append(res.Contents, xmlObjectEntry{Key: name(o.Name()), Generation: o.Generation(),
				MetaGeneration: o.Metageneration(), LastModified: xmlTime(o.Updated()), ETag: objectETag(o),
				Size: o.Size(), StorageClass: o.Attrs().StorageClass})
			last = max(last, o.Name())
		}
		for _, p := range page.Prefixes {
			res.CommonPrefixes = append(res.CommonPrefixes, xmlPrefix{Prefix: name(p)})
			last = max(last, p)
		}
		if page.Next != "" {
			res.IsTruncated, res.NextMarker = true, name(last)
		}
	}
	writeXML(w, http.StatusOK, res)
	return nil
}
