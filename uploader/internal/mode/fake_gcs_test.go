package mode

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/xfer"
)

// fakeGCS is a scripted service behind both seams of a parallel upload:
// the Transport (objects, resumable sessions, composes, deletes, as the
// service keeps them) and the XML API's Multipart (uploads and their
// parts). It keeps what a user would look at afterwards (the objects, the
// sessions, the multipart uploads) and every call in the order it came.
// fault scripts a call's answer; without it every call does what it asks.
type fakeGCS struct {
	// fault, when not nil, scripts call c before the service looks at
	// it: a nil err lets it through; otherwise err is the answer, and
	// applied says that the service did what the call asked first (the
	// answer was lost on its way back). errHold, for a session's finish,
	// makes the service take the data and never answer.
	fault func(c fakeCall) (applied bool, err error)

	mu        sync.Mutex
	gen       int64
	objects   map[string]*fakeObject
	sessions  map[string]*fakeSession
	uploads   map[string]*fakeUpload
	nUploads  int
	calls     []fakeCall
	composes  []fakeCompose
	completes [][]xfer.MultipartPart
	misfed    bool   // a stream or a part was handed chunks that do not go on from where it stood
	badCRC    string // an object whose CRC32C the service reports wrong
}

// fakeCall is a call that reached the service: its operation, the object
// (a part's number, an upload's id) it names, how many calls of the same
// operation to the same name came before it, and the caller's context.
type fakeCall struct {
	op, name string
	n        int
	ctx      context.Context
}

// errHold makes a session's finish go unanswered (see fakeGCS.fault).
var errHold = errors.New("the service holds the finish")

type fakeObject struct {
	data []byte
	gen  int64
}

type fakeSession struct {
	name      string
	match     *int64 // the spec's ifGenerationMatch
	data      []byte
	obj       *wire.Object // once finalized
	cancelled bool
}

type fakeUpload struct {
	name    string
	started time.Time
	parts   map[int]fakePart
}

type fakePart struct {
	data []byte
	etag string
}

// fakeCompose is a compose that reached the service: the object it
// makes, its sources, and its ifGenerationMatch.
type fakeCompose struct {
	name  string
	srcs  []xfer.Source
	match *int64
}

func newFakeGCS() *fakeGCS {
	return &fakeGCS{objects: map[string]*fakeObject{}, sessions: map[string]*fakeSession{}, uploads: map[string]*fakeUpload{}}
}

// call records a call of op to name and returns what the script makes
// of it: apply, whether the service does what it asks, and the error to
// answer with (after applying it, when apply is set).
func (g *fakeGCS) call(ctx context.Context, op, name string) (apply bool, err error) {
	g.mu.Lock()
	c := fakeCall{op: op, name: name, ctx: ctx}
	for _, d := range g.calls {
		if d.op == op && d.name == name {
			c.n++
		}
	}
	g.calls = append(g.calls, c)
	g.mu.Unlock()
	if g.fault == nil {
		return true, nil
	}
	applied, err := g.fault(c)
	return applied || err == nil, err
}

// callsOf returns the calls of the operations ops ("op name"), in order;
// no ops: every call.
func (g *fakeGCS) callsOf(ops ...string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, c := range g.calls {
		if len(ops) == 0 || slices.Contains(ops, c.op) {
			out = append(out, c.op+" "+c.name)
		}
	}
	return out
}

// count returns how many calls "op name" came.
func (g *fakeGCS) count(call string) int {
	n := 0
	for _, c := range g.callsOf() {
		if c == call {
			n++
		}
	}
	return n
}

// objectNames returns the names of the objects the service holds, sorted.
func (g *fakeGCS) objectNames() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var names []string
	for n := range g.objects {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// object returns the object name, or nil.
func (g *fakeGCS) object(name string) *fakeObject {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.objects[name]
}

// openUploads returns the ids of the multipart uploads in progress, sorted.
func (g *fakeGCS) openUploads() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var ids []string
	for id := range g.uploads {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// sessionsOf returns the sessions of object name.
func (g *fakeGCS) sessionsOf(name string) []fakeSession {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []fakeSession
	for _, s := range g.sessions {
		if s.name == name {
			out = append(out, *s)
		}
	}
	return out
}

// storeLocked makes data the live generation of object name. g.mu is held.
func (g *fakeGCS) storeLocked(name string, data []byte) *wire.Object {
	g.gen++
	g.objects[name] = &fakeObject{data: data, gen: g.gen}
	return g.wireLocked(name)
}

// wireLocked returns object name as the service returns it. g.mu is held.
func (g *fakeGCS) wireLocked(name string) *wire.Object {
	o := g.objects[name]
	crc := crc32c.Checksum(o.data)
	if name == g.badCRC {
		crc ^= 1
	}
	return &wire.Object{Name: name, Bucket: xfer.BucketPrefix + "b", Size: int64(len(o.data)), Generation: o.gen, Metageneration: 1,
		Checksums: &wire.ObjectChecksums{Crc32C: &crc}}
}

// put stores data as object name, as another writer would.
func (g *fakeGCS) put(name string, data []byte) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.storeLocked(name, data).Generation
}

// liveGenLocked returns the live generation of object name, 0 if none.
// g.mu is held.
func (g *fakeGCS) liveGenLocked(name string) int64 {
	if o := g.objects[name]; o != nil {
		return o.gen
	}
	return 0
}

// The Transport.

func (g *fakeGCS) WriteObject(u *xfer.Request, _ []*xfer.ChunkRef, _ time.Duration) (*wire.Object, bool, error) {
	g.call(u.Ctx, "write", u.Object)
	return nil, true, status.Error(codes.Unimplemented, "a parallel upload writes no object whole")
}

func (g *fakeGCS) ComposeObject(u *xfer.Request, srcs []xfer.Source, _ time.Duration) (*wire.Object, error) {
	apply, err := g.call(u.Ctx, "compose", u.Object)
	if !apply {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	c := fakeCompose{name: u.Object, srcs: slices.Clone(srcs)}
	if m := u.Spec().IfGenerationMatch; m != nil {
		v := *m
		c.match = &v
	}
	g.composes = append(g.composes, c)
	if len(srcs) > maxComposeSources {
		return nil, status.Errorf(codes.InvalidArgument, "%d sources, at most %d", len(srcs), maxComposeSources)
	}
	var data []byte
	for _, s := range srcs {
		o := g.objects[s.Name]
		if o == nil || s.Gen != 0 && s.Gen != o.gen {
			return nil, status.Errorf(codes.NotFound, "no source %s#%d", s.Name, s.Gen)
		}
		data = append(data, o.data...)
	}
	if c.match != nil && *c.match != g.liveGenLocked(u.Object) {
		return nil, status.Error(codes.FailedPrecondition, "ifGenerationMatch")
	}
	o := g.storeLocked(u.Object, data)
	if err != nil {
		return nil, err
	}
	return o, nil
}

func (g *fakeGCS) DeleteObject(u *xfer.Request, name string, gen int64, _ time.Duration) error {
	apply, err := g.call(u.Ctx, "delete", name)
	if !apply {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	o := g.objects[name]
	switch {
	case o == nil:
		return status.Error(codes.NotFound, "no object")
	case gen != 0 && gen != o.gen:
		return status.Error(codes.FailedPrecondition, "another generation")
	}
	delete(g.objects, name)
	return err
}

func (g *fakeGCS) GetObject(u *xfer.Request, name string, _ time.Duration) (*wire.Object, error) {
	if apply, err := g.call(u.Ctx, "get", name); !apply || err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.objects[name] == nil {
		return nil, status.Error(codes.NotFound, "no object")
	}
	return g.wireLocked(name), nil
}

func (g *fakeGCS) StartUpload(u *xfer.Request, _ time.Duration) (string, error) {
	apply, err := g.call(u.Ctx, "start", u.Object)
	if !apply {
		return "", err
	}
	g.mu.Lock()
	id := "session-" + strconv.Itoa(len(g.sessions)+1)
	s := &fakeSession{name: u.Object}
	if m := u.Spec().IfGenerationMatch; m != nil {
		v := *m
		s.match = &v
	}
	g.sessions[id] = s
	g.mu.Unlock()
	if err != nil {
		return "", err
	}
	return id, nil
}

func (g *fakeGCS) QueryStatus(u *xfer.Request, id string, _ xfer.Route, _ int64, _ time.Duration) (int64, *wire.Object, error) {
	if apply, err := g.call(u.Ctx, "query", u.Object); !apply || err != nil {
		return 0, nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.sessions[id]
	switch {
	case s == nil || s.cancelled:
		return 0, nil, status.Error(codes.NotFound, "no session")
	case s.obj != nil:
		return s.obj.GetSize(), s.obj, nil
	}
	return int64(len(s.data)), nil, nil
}

func (g *fakeGCS) OpenStream(u *xfer.Request, id string, _ xfer.Route, persisted int64, sink xfer.StreamSink, _ time.Duration) (xfer.Stream, error) {
	if apply, err := g.call(u.Ctx, "open", u.Object); !apply || err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &fakeGCSStream{g: g, u: u, id: id, sink: sink, from: persisted, ctx: ctx, cancel: cancel}, nil
}

func (g *fakeGCS) OpenAppend(u *xfer.Request, _ xfer.AppendOpen, _ time.Duration) (xfer.AppendStream, xfer.AppendOpened, error) {
	g.call(u.Ctx, "open-append", u.Object)
	return nil, xfer.AppendOpened{}, status.Error(codes.Unimplemented, "appendable")
}

func (g *fakeGCS) CancelUpload(u *xfer.Request, id string, _ time.Duration) error {
	apply, err := g.call(u.Ctx, "cancel", u.Object)
	if !apply {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.sessions[id]
	switch {
	case s == nil:
		return status.Error(codes.NotFound, "no session")
	case s.obj != nil:
		return status.Error(codes.FailedPrecondition, "the session is finalized")
	}
	s.cancelled = true
	return err
}

func (g *fakeGCS) Window(perSend int64) int64 { return perSend }

func (g *fakeGCS) Names() *xfer.CallNames { return &testNames }

func (g *fakeGCS) Close() error { return nil }
