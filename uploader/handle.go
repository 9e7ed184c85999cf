package uploader

import (
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/mode"
	"github.com/objup/objup/uploader/internal/xfer"
)

// The kinds of upload a Handle continues.
const (
	// KindResumable is a resumable session (the upload of an object
	// larger than one chunk, or one made WithResumable).
	KindResumable = "resumable"
	// KindParallel is a parallel composite upload (WithParallelUpload).
	KindParallel = "parallel"
	// KindAppendable is an unfinalized appendable object (WithAppendable).
	KindAppendable = "appendable"
	// KindMultipart is a parallel upload through the XML API's multipart
	// upload (WithParallelUpload, ViaMultipart).
	KindMultipart = "multipart"
)

// handleVersion is the version of the Handle format this package writes.
const handleVersion = 1

// Handle is what a later Writer, in this process or another, needs to
// continue an upload: the service's name for it and what the service held
// of it when the handle was taken, from offset 0, with the CRC32C of those
// bytes. Writer.Handle returns it at any moment of a Writer's life; a
// Journal keeps it on disk; Client.Resume continues it from the same
// source, after checking the source against it. It is a plain value that
// encoding/json marshals as it is (the field names are part of the
// format, which carries a version); it holds no credentials, but a JSON
// API session's URI lets whoever has it write the object until the session
// ends, so keep handles as private as the data.
//
// Which fields are set depends on Kind:
//   - KindResumable: Session, Persisted, CRC32C.
//   - KindParallel: TempPrefix, ID, PartSize and Parts (the temporary
//     objects, TempPrefix + ID + "/part-N"), Spec (the object's attributes
//     and conditions, which the final compose applies), and Generation
//     once the compose made the object.
//   - KindAppendable: Generation, Persisted, CRC32C.
//   - KindMultipart: UploadID, PartSize and Parts (part number Index+1,
//     with the ETag the service gave it once stored), Spec, and Composing
//     once the complete may have gone out.
type Handle struct {
	// Version is the format's version (1).
	Version int `json:"v"`
	// Kind is KindResumable, KindParallel, KindAppendable or
	// KindMultipart.
	Kind string `json:"kind"`
	// API is the API that began the upload, "grpc" or "json": a session
	// continues on the API that opened it.
	API string `json:"api"`
	// Bucket and Object name the object.
	Bucket string `json:"bucket"`
	Object string `json:"object"`
	// ChunkSize is the Writer's chunk size, which a resumed Writer takes.
	ChunkSize int `json:"chunkSize"`
	// Session is a resumable session's id: the gRPC API's upload id, or
	// the JSON API's session URI.
	Session string `json:"session,omitempty"`
	// Persisted is how many bytes of the source the service held, and
	// CRC32C their CRC-32C (Castagnoli).
	Persisted int64  `json:"persisted"`
	CRC32C    uint32 `json:"crc32c"`
	// Generation is the appendable object's generation, or the
	// generation of the object a parallel upload composed.
	Generation int64 `json:"generation,omitempty"`
	// Composing says that a parallel upload's last compose may have gone
	// out: its answer did not come back while the Writer ran.
	Composing bool `json:"composing,omitempty"`
	// ComposeMatch is that compose's ifGenerationMatch, which a
	// compose made again takes too, when HasComposeMatch.
	ComposeMatch    int64 `json:"composeMatch,omitempty"`
	HasComposeMatch bool  `json:"hasComposeMatch,omitempty"`
	// TempPrefix, ID and PartSize name a parallel upload's temporary
	// objects; Parts are those that went out.
	TempPrefix string       `json:"tempPrefix,omitempty"`
	ID         string       `json:"id,omitempty"`
	PartSize   int64        `json:"partSize,omitempty"`
	Parts      []HandlePart `json:"parts,omitempty"`
	// UploadID is a multipart upload's id.
	UploadID string `json:"uploadId,omitempty"`
	// Spec is the object's WriteObjectSpec (google.storage.v2, in the
	// protocol buffers' wire format): a parallel upload's attributes and
	// conditions.
	Spec []byte `json:"spec,omitempty"`
}

// HandlePart is one temporary object of a parallel upload: its index
// (its name is TempPrefix + ID + "/part-" + Index), where its bytes start
// in the source, its size and CRC32C, and the generation the service
// reported when it stored it (0: it went out, and may or may not exist).
type HandlePart struct {
	Index      int    `json:"index"`
	Offset     int64  `json:"offset"`
	Size       int64  `json:"size"`
	CRC32C     uint32 `json:"crc32c"`
	Generation int64  `json:"generation,omitempty"`
	// Session is the part's resumable session, once it began.
	Session string `json:"session,omitempty"`
	// ETag is the ETag the service gave a multipart upload's part once
	// it stored it.
	ETag string `json:"etag,omitempty"`
}

// Handle returns what a later Writer needs to continue the upload (see
// Client.Resume), as it stands now, and whether there is anything to
// continue: false before the upload has a session, a parallel upload's
// first part or an appendable object's first flush (an object that fits
// in one chunk goes out in one call and has none), and once it ended,
// unless its outcome is unknown (IsOutcomeUnknown; Resume then settles it
// from the service). Handle may be called from any goroutine, also while
// another method of the Writer runs.
func (w *Writer) Handle() (Handle, bool) {
	if c := w.cfg.cps.Load(); c != nil {
		return c.handle()
	}
	return Handle{}, false
}

// checkpoints returns the upload's checkpoints, made at the first call,
// on the Writer's goroutine, by a mode that can be continued: a one-shot
// upload has none, and pays nothing for them.
func (w *Writer) checkpoints() *checkpoints {
	c := w.cfg.tracking()
	c.mu.Lock()
	if c.base.Bucket == "" {
		c.base = Handle{API: apiName(w.client().grpc()), Bucket: w.req.Bucket, Object: w.req.Object, ChunkSize: w.ch.ChunkSize()}
		if w.cfg.appending {
			c.base.Kind = KindAppendable
		}
	}
	c.mu.Unlock()
	return c
}

// checkpoints is a Writer's resume handle as it progresses, its journal
// entry, and its caller's progress callback: the modes report to it
// (xfer.Checkpointer) from the Writer's goroutine and from those of their
// streams and parts.
type checkpoints struct {
	journal    *Journal       // nil: none
	nilJournal bool           // WithJournal(nil), which validate refuses
	progress   *mode.Progress // WithProgress's, or nil

	mu     sync.Mutex
	base   Handle // what does not change: kind, API, names, size, chunk size
	cp     xfer.Checkpoint
	active bool   // the upload has something to continue
	ended  bool   // the upload ended; kept only if its outcome is unknown
	seq    uint64 // changes so far
	// Under wmu: the journal's writes, in order.
	wmu       sync.Mutex
	written   uint64    // the seq the journal holds; 0: it holds nothing
	writtenAt int64     // the persisted size it holds
	syncedAt  time.Time // when it was last written with an fsync
}

// A Writer writes its journal entry at once, with an fsync, when it names
// what is about to go out (a session, a part, a compose); as the service
// persists more, it writes it again once journalBytes more are persisted
// (without an fsync: a killed process's writes stay in the page cache),
// and at most journalEvery apart with an fsync. The service's own answer
// (the session's status) is what a resume goes by; the entry's persisted
// bytes are those a resume checks the source against before it sends.
const (
	journalEvery = 500 * time.Millisecond
	journalBytes = 1 << 20
)

// Update implements xfer.Checkpointer.
func (c *checkpoints) Update(f func(*xfer.Checkpoint), durable bool) error {
	c.mu.Lock()
	f(&c.cp)
	c.active = true
	c.seq++
	c.mu.Unlock()
	return c.write(durable)
}

// handle returns the upload's handle, and whether there is one.
func (c *checkpoints) handle() (Handle, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.active || c.ended {
		return Handle{}, false
	}
	h := c.handleLocked()
	return h, h.names()
}

// names reports whether h names an upload a Resume can continue: a
// session, a parallel upload's temporary objects, an appendable object's
// generation.
func (h *Handle) names() bool {
	switch h.Kind {
	case KindParallel:
		return h.ID != ""
	case KindMultipart:
		return h.UploadID != ""
	case KindAppendable:
		return h.Generation != 0
	}
	return h.Session != ""
}

// handleLocked builds the handle. c.mu is held.
func (c *checkpoints) handleLocked() Handle {
	h := c.base
	cp := &c.cp
	h.Version = handleVersion
	h.Persisted, h.CRC32C, h.Generation = cp.Persisted, cp.CRC32C, cp.Gen
	switch {
	case h.Kind == KindAppendable:
	case cp.UploadID != "":
		h.Kind, h.API = KindMultipart, xmlAPIName
		h.UploadID, h.PartSize, h.Composing = cp.UploadID, cp.PartSize, cp.Composing
		h.Persisted, h.CRC32C = 0, 0
		h.Parts = handleParts(cp.Parts)
	case cp.ID != "":
		h.Kind = KindParallel
		h.TempPrefix, h.ID, h.PartSize, h.Composing = cp.Prefix, cp.ID, cp.PartSize, cp.Composing
		h.ComposeMatch, h.HasComposeMatch = cp.ComposeMatch, cp.HasMatch
		h.Persisted, h.CRC32C = 0, 0
		h.Parts = handleParts(cp.Parts)
	default:
		h.Kind = KindResumable
		h.Session = cp.Session
	}
	return h
}

// write writes the handle to the journal, if the upload keeps one: now
// when durable is set, else when journalEvery passed since the last write
// and the handle changed.
func (c *checkpoints) write(durable bool) error {
	if c.journal == nil {
		return nil
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	seq, active, ended, persisted := c.seq, c.active, c.ended, c.cp.Persisted
	if !active || ended || seq == c.written ||
		!durable && persisted-c.writtenAt < journalBytes && time.Since(c.syncedAt) < journalEvery {
		c.mu.Unlock()
		return nil
	}
	h := c.handleLocked()
	c.mu.Unlock()
	if !h.names() {
		return nil
	}
	// A killed process leaves what it wrote to the page cache: a write
	// without fsync keeps the entry close behind the service. The fsync,
	// which a machine's crash needs, goes with the writes that name what
	// is about to go out, and at most journalEvery apart.
	sync := durable || time.Since(c.syncedAt) >= journalEvery
	if err := c.journal.put(&h, sync); err != nil {
		return err
	}
	c.written, c.writtenAt = seq, persisted
	if sync {
		c.syncedAt = time.Now()
	}
	return nil
}

// end records the end of the upload: its journal entry goes, unless its
// outcome is unknown (then a resume settles it).
func (c *checkpoints) end(err error) {
	c.mu.Lock()
	keep := err != nil && IsOutcomeUnknown(err) && c.active
	if !keep {
		c.ended = true
	}
	h := c.base
	c.mu.Unlock()
	if c.journal == nil {
		return
	}
	if keep {
		_ = c.write(true)
		return
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.written != 0 {
		_ = c.journal.Remove(h.Bucket, h.Object)
	}
}

// setSpec notes the object's spec, which a parallel upload's compose
// applies.
func (c *checkpoints) setSpec(s *wire.WriteObjectSpec) {
	b, err := proto.Marshal(s)
	if err != nil {
		panic(err) // a spec the transport sends always marshals
	}
	c.mu.Lock()
	c.base.Spec = b
	c.mu.Unlock()
}

// apiName names the API a client uploads over, as Handle.API does.
func apiName(grpc bool) string {
	if grpc {
		return "grpc"
	}
	return "json"
}

// handleParts are a parallel upload's parts as its handle notes them.
func handleParts(ps []xfer.StoredPart) []HandlePart {
	hs := make([]HandlePart, len(ps))
	for i, p := range ps {
		hs[i] = HandlePart{Index: p.Index, Offset: p.Offset, Size: p.Size, CRC32C: p.CRC32C, Generation: p.Gen, Session: p.Session, ETag: p.ETag}
	}
	return hs
}
