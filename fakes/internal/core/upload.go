package core

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"hash/crc32"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/fakes/internal/writes"
	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/internal/wire"
)

// upload is an object being written: a one-shot write (id == ""), which
// lives as long as its stream, a resumable session, which lives in
// Server.sessions until it fails for good, expires, or until KeepFinalized sessions
// were finalized after it, or an appendable object (appendable set), which
// its stored object points to until it is finalized or replaced (see
// append.go).
type Upload struct {
	ID         string
	Bucket     *store.Bucket
	Object     string
	Attrs      store.Attrs       // the attributes the object gets
	Cond       *store.Conditions // checked when the object is stored
	Appendable bool

	Mu           sync.Mutex
	writes.State                          // size and checksums; MD5 is nil for appendable objects, which have none
	chunks       [][]byte                 // the content of each accepted message, as received
	Stored       *store.Object            // set once finalized
	Result       *wire.Object             // stored, for gRPC
	Gone         bool                     // resumable session removed after a final failure, or cancelled; appendable object replaced
	Cancelled    bool                     // resumable session cancelled (gone too)
	sessions     *store.Sessions[*Upload] // a resumable session's registry

	// Appendable objects (see append.go): the writer state, and how many
	// of chunks the stored object holds.
	App        writes.Appendable
	persistedN int

	spath string // on disk: the file of the session's bytes (see session_disk.go); "" if none
}

// lookupSession returns the resumable session id, or NotFound.
func (s *Core) LookupSession(id string) (*Upload, error) {
	up, ok := s.Resumables.Get(id)
	if !ok {
		return nil, status.Errorf(codes.NotFound, "upload %q not found", id)
	}
	return up, nil
}

// startSession makes up a resumable session, with a new id; on disk, its
// record is saved first.
func (s *Core) StartSession(up *Upload) error {
	up.ID, up.sessions = rand.Text(), &s.Resumables
	if err := s.saveSession(up); err != nil {
		return err
	}
	s.Resumables.Add(up.ID, up)
	return nil
}

// KeepFinalized is how many finalized sessions the server remembers, for
// QueryWriteStatus and retried finish_writes; older ones are forgotten (the
// service keeps them for a week), which bounds the memory of long runs.
var KeepFinalized = 4096

// Lock, Unlock, Written, Session, Appending, Done and Drop implement
// writes.Upload.
func (up *Upload) Lock()                  { up.Mu.Lock() }
func (up *Upload) Unlock()                { up.Mu.Unlock() }
func (up *Upload) Written() *writes.State { return &up.State }
func (up *Upload) Session() string        { return up.ID }
func (up *Upload) Done() (*wire.Object, bool) {
	return up.Result, up.Gone
}

func (up *Upload) Appending() *writes.Appendable {
	if !up.Appendable {
		return nil
	}
	return &up.App
}

// Drop removes a resumable session after a failure it cannot recover
// from. up.mu must be held.
func (up *Upload) Drop() {
	if up.ID == "" {
		return
	}
	up.Gone = true
	up.chunks = nil
	up.sessions.Remove(up.ID)
}

// newUpload returns an upload of the object name with the attributes a to
// bucket b.
func NewUpload(b *store.Bucket, name string, a store.Attrs, cond *store.Conditions, limit *int64) *Upload {
	return &Upload{Bucket: b, Object: name, Attrs: a, Cond: cond, State: writes.State{Limit: limit, MD5: md5.New()}}
}

// add appends content, whose CRC32C is crc, to the upload. up.mu is held.
// The upload keeps content: the caller must not change it afterwards.
func (up *Upload) Add(content []byte, crc uint32) {
	if up.MD5 != nil {
		up.MD5.Write(content)
	}
	if up.spath != "" {
		up.appendSession(content)
		if up.Gone {
			return
		}
	}
	up.chunks = append(up.chunks, content)
	up.State.Add(int64(len(content)), crc)
}

// addUnchecked is add for content whose CRC32C is not known yet.
func (up *Upload) AddUnchecked(content []byte) {
	up.Add(content, crc32.Checksum(content, crc32c.Table))
}

// finalize verifies a complete upload and stores it as written by tenant
// (writes.Finalize), once its commit delay passed; ctx is the request's
// (see commits.commit). up.mu is held.
func (s *Core) Finalize(ctx context.Context, up *Upload, tenant string) (*wire.Object, error) {
	var buf [store.MD5Len]byte
	return writes.Finalize(up, buf[:0], func(md5 []byte) (*wire.Object, error) {
		if err := s.Commits.Commit(ctx); err != nil {
			return nil, err
		}
		o, err := s.putSession(up, up.content(md5), tenant)
		if err != nil {
			return nil, err
		}
		up.Stored, up.Result, up.chunks, up.MD5 = o, ToObject(up.Bucket, o), nil, nil
		if up.ID != "" {
			s.Resumables.Retire(up.ID, KeepFinalized)
		}
		return up.Result, nil
	})
}

// content is what up holds, as received (not copied), with its checksums;
// sum is its MD5, nil if none.
func (up *Upload) content(sum []byte) store.Content {
	c := store.Content{Parts: up.chunks, Size: up.Size, CRC32C: up.CRC}
	c.HasMD5 = copy(c.MD5[:], sum) == store.MD5Len
	return c
}
