package xfer

// Checkpoint is what a mode reports of an upload that a later process can
// continue: the resumable session and what the service holds of it, or a
// parallel upload's temporary prefix and the parts it stored. The Writer
// turns it into the public resume handle and its journal entry.
type Checkpoint struct {
	// Session is a resumable session's id (an upload id, or the JSON
	// API's session URI).
	Session string
	// Persisted is how many bytes of the object the service holds, from
	// offset 0: a session's persisted size at a chunk boundary, and
	// CRC32C their checksum.
	Persisted int64
	CRC32C    uint32
	// Gen is the generation of a parallel upload's object once its last
	// compose made it; Composing says that compose may have gone out.
	Gen       int64
	Composing bool
	// ComposeMatch is the ifGenerationMatch of that compose (0: the
	// object must not exist), when HasMatch.
	ComposeMatch int64
	HasMatch     bool
	// Prefix and ID name a parallel upload's temporary objects: its parts
	// are Prefix + ID + "/part-N", each of PartSize bytes (the last may be
	// shorter).
	Prefix   string
	ID       string
	PartSize int64
	// Parts are the parts that went out, in the order they did: each is
	// noted (Gen 0) before its first byte is sent, and noted again with
	// the generation the service reported once stored.
	Parts []StoredPart
	// UploadID is a multipart upload's id (see xfer.Multipart); its parts
	// are numbered Index+1. Composing then says that its complete may
	// have gone out.
	UploadID string
}

// StoredPart is a part of a parallel upload: its index, where its bytes
// start in the object, its size and CRC32C, and the generation the service
// reported when it stored the part (0: not known to be stored).
type StoredPart struct {
	Index  int
	Offset int64
	Size   int64
	CRC32C uint32
	Gen    int64
	// ETag is the ETag the service gave a multipart upload's part.
	ETag string
	// Session is the id of the part's session once it began: a later
	// process cancels it, so that a message of it still on its way
	// cannot store the part after it looked.
	Session string
}

// Part returns the note of part i, or nil.
func (c *Checkpoint) Part(i int) *StoredPart {
	for j := range c.Parts {
		if c.Parts[j].Index == i {
			return &c.Parts[j]
		}
	}
	return nil
}

// Checkpointer takes a mode's checkpoints. Update applies f to the
// upload's checkpoint under the checkpointer's lock; it may be called from
// any goroutine. With durable set, the call returns only once a journal,
// if the upload keeps one, holds the result; its error fails the upload.
type Checkpointer interface {
	Update(f func(*Checkpoint), durable bool) error
}
