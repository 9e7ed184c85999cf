package xfer

import (
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/objup/objup/internal/wire"
)

// Appendable is what an appendable upload (WithAppendable, or
// Client.TakeOver) knows of its object on the service: its generation, the
// latest write handle and routing token, and what the last stream found
// persisted when it opened. The Writer sets it up; the gRPC transport keeps
// it current (a stream's receiver stores each new handle, a redirect's
// error the new route), under mu.
type Appendable struct {
	Unfinalized bool // WithoutFinalize: Close leaves the object unfinalized
	Takeover    bool // the object exists (Client.TakeOver): gen names it
	Opened      bool // a stream that creates the object went out

	Mu        sync.Mutex
	Gen       int64
	Handle    []byte
	Token     string       // the routing token of the last redirect
	Persisted int64        // the service's persisted size when the last stream opened
	CRC       uint32       // the CRC32C of those bytes, if hasCRC
	HasCRC    bool         // the service gave persisted_data_checksums
	Object    *wire.Object // the object as the last open returned it, if it did
	Created   bool         // a stream created the object (the first open succeeded)
	Conn      Route        // the transport's: the connection of the object's streams
	Ready     Dropper      // the transport's: a stream reopened by QueryStatus, for OpenStream to adopt
}

// Route returns the generation, handle and routing token to open a stream
// with, and whether the object exists (a stream created it, or it was
// taken over): else the stream creates it.
func (a *Appendable) Route() (gen int64, handle []byte, token string, exists bool) {
	a.Mu.Lock()
	defer a.Mu.Unlock()
	return a.Gen, a.Handle, a.Token, a.Created || a.Takeover
}

// Answered takes in an answer of the object's stream: a new write handle,
// which the service sends now and then.
func (a *Appendable) Answered(resp *wire.BidiWriteObjectResponse) {
	a.Mu.Lock()
	if h := resp.GetWriteHandle(); h != nil {
		a.Handle = append(a.Handle[:0:0], h.GetHandle()...)
	}
	a.Mu.Unlock()
}

// DropReady tears down a stream that queryStatus reopened and no
// openStream took (its receiver never ran).
func (a *Appendable) DropReady() {
	a.Mu.Lock()
	gs := a.Ready
	a.Ready = nil
	a.Mu.Unlock()
	if gs != nil {
		gs.Drop()
	}
}

// Redirected takes the route of a redirect out of err, if err is one (an
// ABORTED status with a BidiWriteObjectRedirectedError), notes it in ev
// (if not nil), and reports whether it was.
func (a *Appendable) Redirected(err error, ev Events) bool {
	r := RedirectOf(err)
	if r == nil {
		return false
	}
	if ev != nil {
		ev.Redirected(r.GetRoutingToken())
	}
	a.Mu.Lock()
	if r.RoutingToken != nil {
		a.Token = r.GetRoutingToken()
	}
	if r.WriteHandle != nil {
		a.Handle = append(a.Handle[:0:0], r.GetWriteHandle().GetHandle()...)
	}
	if r.Generation != nil {
		// The object exists: the stream is opened again on it.
		a.Gen, a.Created = r.GetGeneration(), true
	}
	a.Mu.Unlock()
	return true
}

// redirectTypeURL names the detail of a redirect.
const redirectTypeURL = "type.googleapis.com/google.storage.v2.BidiWriteObjectRedirectedError"

// Dropper is a stream the transport opened and nothing adopted: Drop tears
// it down.
type Dropper interface{ Drop() }

// RedirectOf returns the BidiWriteObjectRedirectedError that err carries,
// or nil. internal/wire registers its messages under a package of its own,
// so the detail is decoded here by its type URL.
func RedirectOf(err error) *wire.BidiWriteObjectRedirectedError {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Aborted {
		return nil
	}
	for _, d := range st.Proto().GetDetails() {
		if d.GetTypeUrl() != redirectTypeURL {
			continue
		}
		r := new(wire.BidiWriteObjectRedirectedError)
		if proto.Unmarshal(d.GetValue(), r) == nil {
			return r
		}
	}
	return nil
}

// IsRedirect reports whether err asks the client to open its stream again
// elsewhere.
func IsRedirect(err error) bool { return RedirectOf(err) != nil }
