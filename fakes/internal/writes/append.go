package writes

import (
	"context"
	"net/url"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/objup/objup/internal/wire"
)

// Appendable is the writer state of an appendable object, the same in the
// fake and the sink: its generation, the epoch of its exclusive writer
// (which write handles name), what is persisted, the stream whose bytes
// beyond that are pending, and the routing token a stream must carry
// after a redirect. The bytes received (persisted or pending) are the
// State's. Its methods do not lock: the caller serializes them with those
// of the State.
//
// The rules: the bytes a stream sends are pending until a flush (Persist);
// a stream that breaks loses them (Drop). A stream that reopens the object
// (Reopen) with the write handle resumes as the same writer, without one
// takes it over (a new epoch); either way the stream before is fenced
// (Fenced) and its pending bytes are dropped.
type Appendable struct {
	Name         string // the object's name, for messages
	Gen          int64
	Epoch        uint64 // the writer's; 1 for the stream that created the object
	Persisted    int64  // bytes persisted
	PersistedCRC uint32 // their CRC32C
	Writer       any    // the stream writing now; nil if none
	RouteToken   string // set by a redirect: the token the next stream must carry
}

// Handle is the opaque write handle of the writer with epoch of generation
// gen of an appendable object.
func Handle(gen int64, epoch uint64) []byte {
	return []byte("g" + strconv.FormatInt(gen, 10) + "w" + strconv.FormatUint(epoch, 10))
}

// ParseHandle returns the generation and epoch a write handle names.
func ParseHandle(h []byte) (gen int64, epoch uint64, ok bool) {
	rest, ok1 := strings.CutPrefix(string(h), "g")
	g, e, ok2 := strings.Cut(rest, "w")
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	gen, err1 := strconv.ParseInt(g, 10, 64)
	epoch, err2 := strconv.ParseUint(e, 10, 64)
	return gen, epoch, err1 == nil && err2 == nil
}

// Handle returns the current writer's write handle.
func (a *Appendable) Handle() []byte { return Handle(a.Gen, a.Epoch) }

// Persist records that every byte s received is persisted.
func (a *Appendable) Persist(s *State) { a.Persisted, a.PersistedCRC = s.Size, s.CRC }

// Pending reports whether s holds bytes not persisted.
func (a *Appendable) Pending(s *State) bool { return s.Size != a.Persisted }

// Drop forgets the bytes of s that are not persisted: the write goes on
// from the persisted size.
func (a *Appendable) Drop(s *State) { s.Size, s.CRC = a.Persisted, a.PersistedCRC }

// Fenced returns the error for a message of stream w, which writes as
// epoch, if w may no longer write: another stream took the object over or
// resumed its writer; nil if w is the writer.
func (a *Appendable) Fenced(w any, epoch uint64) error {
	if epoch == a.Epoch && a.Writer == w {
		return nil
	}
	return status.Errorf(codes.FailedPrecondition, "another writer has taken over appendable object %q generation %d, or resumed its writer on another stream", a.Name, a.Gen)
}

// Reopen lets stream w write the object, as the append_object_spec spec of
// its first message asks, received with ctx: with a write handle it
// resumes the writer the handle names, without one it takes the object
// over, after check (the spec's preconditions) passes, which starts a new
// epoch. A finalized object may be reopened with a handle only (for a
// retried finish_write). After a redirect, the stream must carry the
// routing token (RoutedTo), else it gets the redirect again. The writer
// before loses its pending bytes, dropped from s. It reports whether w
// took the object over.
func (a *Appendable) Reopen(ctx context.Context, w any, spec *wire.AppendObjectSpec, finalized bool, s *State, check func() error) (takeover bool, err error) {
	switch {
	case a.RouteToken != "" && !RoutedTo(ctx, spec, a.RouteToken):
		return false, Redirect("appendable object "+strconv.Quote(a.Name)+" was redirected: reopen it with the routing token", a.RouteToken, a.Handle(), a.Gen)
	case spec.WriteHandle != nil:
		gen, epoch, ok := ParseHandle(spec.GetWriteHandle().GetHandle())
		if !ok || gen != a.Gen {
			return false, status.Errorf(codes.InvalidArgument, "write_handle %q is not one this server issued for generation %d of %q", spec.GetWriteHandle().GetHandle(), a.Gen, a.Name)
		}
		if epoch != a.Epoch {
			return false, a.Fenced(nil, epoch)
		}
	case finalized:
		return false, status.Errorf(codes.FailedPrecondition, "appendable object %q generation %d is already finalized", a.Name, a.Gen)
	default:
		if err := check(); err != nil {
			return false, err
		}
		a.Epoch++
		takeover = true
	}
	if !finalized {
		a.Drop(s)
	}
	a.RouteToken, a.Writer = "", w
	return takeover, nil
}

// Abandon ends stream w's part in the write, if it is still the writer:
// its pending bytes are lost, as when a stream to the service breaks. It
// reports whether w was the writer.
func (a *Appendable) Abandon(w any, finalized bool, s *State) bool {
	if a.Writer != w {
		return false
	}
	if !finalized {
		a.Drop(s)
	}
	a.Writer = nil
	return true
}

// ErrGone is the error for a write to the object once it is no longer
// the live generation of its name.
func (a *Appendable) ErrGone() error {
	return status.Errorf(codes.NotFound, "appendable object %q generation %d is no longer the live object", a.Name, a.Gen)
}

// Redirected sets the routing token the object's next stream must carry
// and returns the error that ends the stream redirected: codes.Aborted
// with a BidiWriteObjectRedirectedError (Redirect) that carries token, the
// write handle and the generation.
func (a *Appendable) Redirected(msg, token string) error {
	a.RouteToken = token
	return Redirect(msg, token, a.Handle(), a.Gen)
}

// Response is the answer to a state lookup, a flush's lookup or a
// half-close of stream epoch: the persisted size with its CRC32C, and the
// write handle.
func (a *Appendable) Response(epoch uint64) *wire.BidiWriteObjectResponse {
	crc := a.PersistedCRC
	return &wire.BidiWriteObjectResponse{
		WriteStatus:            &wire.BidiWriteObjectResponse_PersistedSize{PersistedSize: a.Persisted},
		PersistedDataChecksums: &wire.ObjectChecksums{Crc32C: &crc},
		WriteHandle:            &wire.BidiWriteHandle{Handle: Handle(a.Gen, epoch)},
	}
}

// ErrAppendSums answers object_checksums of an appendable object that
// come without finish_write.
var ErrAppendSums = status.Error(codes.InvalidArgument, "object_checksums: for an appendable object they may only come with finish_write")

// Redirect is the error of a redirect: codes.Aborted with a
// google.storage.v2.BidiWriteObjectRedirectedError detail that carries the
// routing token and, for an appendable object (handle not nil), the write
// handle and generation to resume with.
func Redirect(msg, token string, handle []byte, gen int64) error {
	r := &wire.BidiWriteObjectRedirectedError{RoutingToken: &token}
	if handle != nil {
		r.WriteHandle = &wire.BidiWriteHandle{Handle: handle}
		r.Generation = &gen
	}
	d, err := proto.Marshal(r)
	if err != nil {
		return status.Errorf(codes.Internal, "redirect: %v", err)
	}
	p := status.New(codes.Aborted, msg).Proto()
	p.Details = []*anypb.Any{{TypeUrl: "type.googleapis.com/google.storage.v2.BidiWriteObjectRedirectedError", Value: d}}
	return status.ErrorProto(p)
}

// RoutedTo reports whether a stream that opened with spec, received with
// ctx, carries the routing token: as routing_token=token in its
// x-goog-request-params metadata, or in spec.
func RoutedTo(ctx context.Context, spec *wire.AppendObjectSpec, token string) bool {
	return spec.GetRoutingToken() == token || HasRoutingToken(ctx, token)
}

// HasRoutingToken reports whether a call's x-goog-request-params carry
// routing_token=token, as a client sends it after a redirect.
func HasRoutingToken(ctx context.Context, token string) bool {
	for _, v := range metadata.ValueFromIncomingContext(ctx, "x-goog-request-params") {
		for kv := range strings.SplitSeq(v, "&") {
			k, val, _ := strings.Cut(kv, "=")
			if u, err := url.QueryUnescape(val); err == nil && k == "routing_token" && u == token {
				return true
			}
		}
	}
	return false
}
