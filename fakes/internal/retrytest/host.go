package retrytest

import (
	"context"
	"net/http"
)

// Host is what the retry test API needs of the server it runs in.
type Host interface {
	// WriteError writes err as the JSON API's error response.
	WriteError(w http.ResponseWriter, err error)
	// WriteJSON writes v as the JSON body of a response with status st.
	WriteJSON(w http.ResponseWriter, st int, v any)
	// Chunk reports on a request to the JSON API's resumable session
	// uploadID: the bytes it carries (its Content-Range) and what the
	// session persisted; false if it carries none or there is no session.
	Chunk(r *http.Request, uploadID string) (Chunk, bool)
	// Stopping is closed when the server closes: a stall ends at once.
	Stopping() <-chan struct{}
	// Redirect returns the error that redirects a BidiWriteObject stream
	// with routing token token and, for an appendable object, its write
	// handle and generation (handle nil: none).
	Redirect(msg, token string, handle []byte, gen int64) error
	// HasRoutingToken reports whether a gRPC call carries routing token
	// token, as a client sends it after a redirect.
	HasRoutingToken(ctx context.Context, token string) bool
	// NoteTarget records, for the request log, the bucket and object that
	// the first message m of a gRPC stream names.
	NoteTarget(ctx context.Context, m any)
}

// Chunk is what Host.Chunk reports of a request to a resumable session.
type Chunk struct {
	First, Last int64 // the bytes of the request
	// Open: "bytes A-*/...", the bytes run to the end of the body, whose
	// length may not be known (Last is then only an estimate).
	Open      bool
	Persisted int64 // the bytes the session persisted
	Done      bool  // the session completed or was cancelled
}

// New returns an empty registry that serves host. grpc names the retry
// test methods whose instructions the host's gRPC calls consume.
func New(host Host, grpc []string) *Tests {
	return &Tests{host: host, methods: newMethods(grpc)}
}

// Active reports whether any test is registered: a request consults the
// registry only then.
func (r *Tests) Active() bool { return r.count.Load() != 0 }
