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
// persisted when it opened. The Writer sets it up; its mode keeps it
// current from what the transport reports (the answer to a stream's open,
// each new handle, a redirect's error), under mu. Transports only read it
// (see AppendOpen).
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
	Conn      Route        // the connection of the object's streams
}

// Route returns where the object's next stream opens: its generation,
// handle and routing token, whether the object exists (a stream created
// it, or it was taken over; else the stream creates it), and the
// connection of its earlier streams.
func (a *Appendable) Route() AppendOpen {
	a.Mu.Lock()
	defer a.Mu.Unlock()
	return AppendOpen{Gen: a.Gen, Handle: a.Handle, Token: a.Token, Exists: a.Created || a.Takeover, Route: a.Conn}
}

// OpenAnswered takes in the service's answer to a stream's open (see
// [Transport.OpenAppend]).
func (a *Appendable) OpenAnswered(ans AppendOpened) {
	a.Mu.Lock()
	defer a.Mu.Unlock()
	a.Conn, a.Persisted, a.Created = ans.Route, ans.Persisted, true
	if ans.Object != nil {
		a.Object, a.Gen = ans.Object, ans.Object.GetGeneration()
	}
	a.CRC, a.HasCRC = ans.CRC, ans.HasCRC
	if ans.Handle != nil {
		a.Handle = append(a.Handle[:0:0], ans.Handle...)
	}
}

// NewHandle takes in a new write handle the service sent on the object's
// stream, which it does now and then (nil: none).
func (a *Appendable) NewHandle(handle []byte) {
	if handle == nil {
		return
	}
	a.Mu.Lock()
	a.Handle = append(a.Handle[:0:0], handle...)
	a.Mu.Unlock()
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
