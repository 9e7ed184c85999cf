package xfer

import "time"

// Multipart is the XML API's multipart upload, the second way a parallel
// upload's parts become one object: no temporary objects, one object
// write at the end. Like a Transport, each method makes ONE attempt of one
// call and reports what came back; the mode decides what happens next.
// The upload's request gives the object (its name, its attributes for
// Initiate) and the header chain of its context.
type Multipart interface {
	// Initiate starts a multipart upload of u's object, with the spec's
	// attributes, and returns its upload id.
	Initiate(u *Request, timeout time.Duration) (uploadID string, err error)
	// UploadPart sends part number n (1 to 10,000) of upload id, the
	// consecutive chunks rs, size bytes whose CRC32C is crc, which the
	// service checks. It returns the part's ETag. sent reports whether
	// the request may have left the process. It takes its own references
	// on the chunks' memory while the request reads it.
	UploadPart(u *Request, id string, n int, rs []*ChunkRef, size int64, crc uint32, timeout time.Duration) (etag string, sent bool, err error)
	// ListParts returns the parts the service holds of upload id, in
	// order, or a NotFound error once the upload completed or was
	// aborted.
	ListParts(u *Request, id string, timeout time.Duration) ([]MultipartPart, error)
	// Complete joins the parts, in order, into u's object and returns
	// what the answer says of it (its generation and CRC32C, where the
	// service sends them). An upload the service no longer knows (it
	// completed, or was aborted) is a NotFound error.
	Complete(u *Request, id string, parts []MultipartPart, timeout time.Duration) (Completed, error)
	// Abort abandons upload id: the service drops its parts. An upload
	// the service no longer knows is a NotFound error.
	Abort(u *Request, id string, timeout time.Duration) error
	// ListUploads returns the uploads in progress of u's object that
	// began from from to to (the service's clock).
	ListUploads(u *Request, from, to time.Time, timeout time.Duration) ([]string, error)
}

// MultipartPart is a part of a multipart upload: its number, the ETag the
// service gave it and its size.
type MultipartPart struct {
	Number int
	ETag   string
	Size   int64
}

// Completed is what the answer to a multipart upload's completion says
// of the object: its generation and metageneration, and its CRC32C when
// HasCRC (0 and false where the answer does not carry them).
type Completed struct {
	Gen, Metagen int64
	CRC32C       uint32
	HasCRC       bool
	Size         int64 // -1: not in the answer
}

// MultipartNames are the names of the XML API's calls, as errors and
// events report them.
var MultipartNames = struct {
	Initiate, Part, List, Complete, Abort, Uploads string
}{
	Initiate: "xml.multipart.initiate", Part: "xml.multipart.uploadPart", List: "xml.multipart.listParts",
	Complete: "xml.multipart.complete", Abort: "xml.multipart.abort", Uploads: "xml.multipart.list",
}
