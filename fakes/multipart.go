package fakes

// MultipartUpload is an XML API multipart upload in progress (initiated,
// neither completed nor aborted), as [Server.MultipartUploads] reports it.
type MultipartUpload struct {
	Bucket, Object string
	UploadID       string
	// Parts are the numbers of the parts uploaded, ascending, and Size
	// the bytes they hold in all.
	Parts []int
	Size  int64
}

// MultipartUploads returns the XML API multipart uploads in progress, in
// the order of their buckets, their object names, then their initiation,
// so that a test can check that a client left none behind: an upload
// holds its parts (and, on GCS, bills for them) until it is completed or
// aborted. With a store on disk it includes the uploads a server started
// on the same directory left.
func (s *Server) MultipartUploads() []MultipartUpload {
	var out []MultipartUpload
	for _, u := range s.core.MPU.All() {
		parts, ok := u.Parts()
		if !ok {
			continue // ended meanwhile
		}
		m := MultipartUpload{Bucket: u.Bucket, Object: u.Object, UploadID: u.ID, Parts: make([]int, len(parts))}
		for i, p := range parts {
			m.Parts[i] = p.Number
			m.Size += p.Size
		}
		out = append(out, m)
	}
	return out
}
