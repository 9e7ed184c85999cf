package mode

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/objup/objup/uploader/internal/retry"
	"github.com/objup/objup/uploader/internal/xfer"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"
)

// Defaults of a parallel composite upload (see ParallelUpload).
const (
	// defaultPartSize is the size of a part: with the default parts in
	// flight (two per connection of the default pool), a parallel upload
	// holds at most 9 parts, 54 MiB, and keeps four connections busy at
	// 50 ms and 100 MB/s each.
	defaultPartSize = 6 << 20
	// maxComposeSources is the most objects one compose joins.
	maxComposeSources = 32
	// maxDeletes is how many deletes of temporary objects run at once:
	// small calls, which a connection carries by the dozen.
	maxDeletes = 64
	// cleanupTimeout bounds the deletion of the temporary objects after an
	// upload, whose own context may have ended.
	cleanupTimeout = time.Minute
	// resweepAfter is when the deletes of parts whose last answer was lost
	// are repeated: the service may have been committing such a part when
	// the first delete found nothing.
	resweepAfter = time.Second
)

// Parallel is the configuration of a parallel composite upload, checked
// by the Writer (see uploader.ParallelUpload): zero PartSize and Parts
// take their defaults; TempPrefix is set.
type Parallel struct {
	PartSize   int64
	Parts      int
	TempPrefix string
	// ID, when set, is the id of an upload that an earlier Writer began
	// (see xfer.Checkpoint), whose parts in Stored the service holds and
	// the source's bytes were checked against: a part whose bytes match
	// again is not sent.
	ID     string
	Stored []xfer.StoredPart
	// Exact makes the last compose replace only the generation that is
	// live when it is about to go out (ifGenerationMatch, unless the
	// spec has one), so that a later process that composes again after a
	// kill cannot make a second generation: see Checkpoint.ComposeMatch.
	Exact bool
	// Composing, ComposeMatch and HasMatch are those of the earlier
	// Writer's checkpoint: its compose may still land, under that
	// precondition (see Checkpoint.Composing).
	Composing    bool
	ComposeMatch int64
	HasMatch     bool
	// XML, when set, carries the parts through the XML API's multipart
	// upload instead of temporary objects and composes (TempPrefix and
	// Exact are then unused). UploadID is the upload an earlier Writer
	// began, whose parts in Stored (with their ETags) the service holds.
	XML      xfer.Multipart
	UploadID string
	// Method is the Writer's choice of method (uploader.ParallelMethod),
	// which it resolves before the upload starts.
	Method int
}

// parallel is the state of a parallel composite upload: the part being
// filled, on the Writer's goroutine, and the parts uploading, each on a
// goroutine of its own.
type parallel struct {
	Params
	cfg      Parallel
	tr       xfer.Transport
	partSize int64
	id       string // the random part of the temporary objects' names
	prefix   string // TempPrefix + id + "/"

	g      *errgroup.Group
	slots  *semaphore.Weighted // Parts at once
	ctx    context.Context     // ends when a part failed for good, or the upload's context ends
	cancel context.CancelFunc

	// Owned by the Writer's goroutine, then by the cleanup (close).
	announced bool          // the upload's checkpoint names its prefix
	cur       *part         // the part being filled; nil before its first chunk
	parts     []*part       // the parts handed to goroutines, in order
	temps     []xfer.Source // intermediate composes' objects

	// mu guards what the parts' goroutines share with the Writer's.
	mu       sync.Mutex
	inflight int   // parts uploading
	stored   int64 // bytes of parts stored
	// wake ends the Writer's wait for a buffer when a part ends (see
	// Buffer): a part gives its buffers back as the service persists
	// them, before it ends, so a wait that began while it was in flight
	// may have to dispatch the part being filled once it ended.
	wake context.CancelFunc

	waitOnce sync.Once
	allDone  chan struct{} // closed once every part's goroutine ended
	err      error         // the first part's failure, once allDone is closed

	// life holds the parts' chunks, apart from the Writer's: they go back
	// when the parts end, which may be after the Writer's call returned
	// (see cleanup).
	life xfer.Lifetime

	mp *mpState // the XML API's multipart upload, or nil: temporary objects
}

// part is one temporary object of a parallel upload: its chunks (whose
// owner references it drops once the service stored it or the upload gave
// up), its own call state and its own retry episode.
type part struct {
	xfer.Request
	index int
	refs  []*xfer.ChunkRef
	size  int64 // its CRC32C is Scratch.CRC, which its checksums point to
	base  int64 // the offset of its first byte in the object
	// Owned by the part's goroutine, then by the cleanup once every
	// part's goroutine ended (allDone).
	gen  int64 // the generation stored; 0 until then
	sent bool  // its outcome is unknown: the service may store it
	// session is the id of the part's session when its outcome is
	// unknown, for the cleanup to settle (see parallel.Close).
	session string
	etag    string // a multipart upload's part: the ETag the service gave it
	retry   retry.Engine
	ev      Events
}

// NewParallel returns the mode of a parallel composite upload with p and
// cfg.
func NewParallel(prm Params, cfg Parallel) Streaming {
	p := &parallel{Params: prm, cfg: cfg}
	h := &p.Params
	size := cfg.PartSize
	if size == 0 {
		size = defaultPartSize
	}
	q := int64(h.Chunker.ChunkSize())
	size = (size + q - 1) / q * q
	parts := cfg.Parts
	if parts == 0 {
		parts = max(4, 2*h.Conns)
	}
	u := h.Request
	p.tr, p.partSize, p.id = h.Transport, size, cfg.ID
	if p.id == "" {
		var rnd [8]byte
		_, _ = rand.Read(rnd[:])
		p.id = hex.EncodeToString(rnd[:])
	}
	p.life.Alloc, p.life.Ev = u.Life.Alloc, h.Events
	p.prefix = cfg.TempPrefix + p.id + "/"
	ctx, cancel := context.WithCancel(u.Ctx)
	p.g, p.ctx = errgroup.WithContext(ctx)
	p.cancel = cancel
	p.slots = semaphore.NewWeighted(int64(parts))
	if cfg.XML != nil {
		p.mp = &mpState{xml: cfg.XML, id: cfg.UploadID}
		if p.partSize < MinMultipartPart {
			p.partSize = (MinMultipartPart + q - 1) / q * q
		}
	}
	return p
}

// Abort stops the parts: none starts any more (see send).
func (p *parallel) Abort(error) { p.cancel() }

// Path is PathParallel, or PathMultipart.
func (p *parallel) Path() string {
	if p.mp != nil {
		return PathMultipart
	}
	return PathParallel
}
