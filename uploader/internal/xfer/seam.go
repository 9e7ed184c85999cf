package xfer

import (
	"context"
	"time"

	"github.com/objup/objup/internal/wire"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Transport is the seam between the upload's logic, written once, and the
// API that carries it: storage v2 over gRPC (the default) or the JSON API
// over HTTP (WithHTTP). Each method makes ONE attempt of one call and
// reports what came back; the caller decides what happens next (retries,
// resumes, releases). A Transport never sees the Writer: it gets the
// upload's request (what goes where, with which spec and checksums), the
// chunks to send, and a timeout for the attempt.
//
// connect-go's protocolClient is the model: the protocol sends, one caller
// decides.
type Transport interface {
	// WriteObject sends the whole object, the consecutive chunks rs, in
	// one request and returns the stored object. sent reports whether the
	// request may have left the process. It takes its own references on
	// the chunks' memory while the request reads it; the caller keeps its
	// own.
	WriteObject(u *Request, rs []*ChunkRef, timeout time.Duration) (o *wire.Object, sent bool, err error)
	// ComposeObject joins the objects srcs, in order, into u's object
	// (u's spec: its name, attributes and preconditions) and returns it.
	ComposeObject(u *Request, srcs []Source, timeout time.Duration) (*wire.Object, error)
	// DeleteObject deletes generation gen of object name in u's bucket.
	DeleteObject(u *Request, name string, gen int64, timeout time.Duration) error
	// GetObject returns the live object name of u's bucket (its
	// attributes), or a NotFound error.
	GetObject(u *Request, name string, timeout time.Duration) (*wire.Object, error)
	// StartUpload opens a resumable session for the upload and returns its
	// id (an upload id, or the session's URI).
	StartUpload(u *Request, timeout time.Duration) (id string, err error)
	// QueryStatus asks how much of session id the service persisted, or
	// the object it finished. size is the object's size if known, else
	// -1. route is where the session's streams went (see [Stream.Route]),
	// NoRoute before the first.
	QueryStatus(u *Request, id string, route Route, size int64, timeout time.Duration) (persisted int64, o *wire.Object, err error)
	// OpenStream opens the channel on which session id's data goes, from
	// the persisted offset on: a BidiWriteObject stream, or a sequence of
	// PUTs. The session gives the stream the chunks to send (see
	// [Stream.Send]); the stream reports to sink. route is where the session's earlier streams went, NoRoute before
	// the first; timeout bounds each send's wait for its acknowledgement.
	OpenStream(u *Request, id string, route Route, persisted int64, sink StreamSink, timeout time.Duration) (Stream, error)
	// OpenAppend opens a stream on u's appendable object where at says
	// and reads the service's first answer, bounded by timeout: the first
	// message creates the object (with u's spec) unless at.Exists, else
	// takes up its generation; it flushes and looks up the state. The
	// stream goes on once Start gives it its sink. The answer's Sent
	// reports, also with an error, whether that first message may have
	// left. A transport without appendable objects fails.
	OpenAppend(u *Request, at AppendOpen, timeout time.Duration) (AppendStream, AppendOpened, error)
	// CancelUpload makes one attempt to cancel session id
	// (CancelResumableWrite, or a DELETE of the session's URI). nil means
	// that the service cancelled it: nothing of the session can be
	// finalized from then on, whatever message of it arrives late. Any
	// error (a finalized session, one the service does not know, a
	// failure) leaves the outcome to a status query.
	CancelUpload(u *Request, id string, timeout time.Duration) error
	// Window returns how many bytes a session may have pushed and not
	// persisted when perSend bytes go out in one send.
	Window(perSend int64) int64
	// Names returns the Names of the transport's calls, for errors and
	// events.
	Names() *CallNames
	// Close releases the transport's connections.
	Close() error
}

// Route is where a session's streams went: the connection they took, as
// the transport that opened them numbers its connections. The session
// passes it back to the transport's later calls (a status query on that
// connection proves that the connection's writer went past every message
// of the session's earlier streams); only the transport reads it.
type Route int32

// NoRoute is the Route of a session that had no stream yet, or of a
// transport whose calls need none.
const NoRoute Route = 0

// AppendOpen is where an appendable object's stream opens: the object's
// generation, its latest write handle and routing token, whether it exists
// (else the stream creates it), and the connection of its earlier streams.
type AppendOpen struct {
	Gen    int64
	Handle []byte
	Token  string
	Exists bool
	Route  Route
}

// AppendOpened is the service's first answer on an appendable object's
// stream: the connection the stream took, the bytes persisted, the object
// if the answer carried it, the CRC32C of the persisted bytes (if HasCRC)
// and a new write handle (nil: none). Sent says that the first message
// may have left.
type AppendOpened struct {
	Sent      bool
	Route     Route
	Persisted int64
	Object    *wire.Object
	CRC       uint32
	HasCRC    bool
	Handle    []byte
}

// AppendStream is an appendable object's stream as OpenAppend returns it:
// Start gives it its sink and starts its reports; Drop tears down one that
// was never started.
type AppendStream interface {
	Stream
	Start(sink StreamSink)
	Drop()
}

// CallNames are the names of a transport's calls, as errors and events
// report them.
type CallNames struct {
	Write, Start, Query, Stream, Compose, Delete string
}

// Source is an object a compose joins: its name and the generation that
// was written.
type Source struct {
	Name string
	Gen  int64
}

// StreamSink is where a stream reports to its session. A stream's
// goroutines call it; it takes only the session's own lock, never one of
// the stream's, and calls nothing of the stream back, so the seam points
// one way: the session drives the stream and gives it the chunks to send,
// the stream reports.
type StreamSink interface {
	// Ack reports the bytes the service persisted and, once finished,
	// the object, and a new write handle of an appendable object (nil:
	// none); an error is an answer the session cannot accept.
	Ack(persisted int64, o *wire.Object, handle []byte) error
	// Broke reports why the stream failed, once.
	Broke(err error)
	// Signal wakes the session: the stream can take more (a stream that
	// sends one request at a time became idle).
	Signal()
}

// Pushed is what the session has Pushed when it has its stream send: the
// end of the data, whether the last chunk is in (then all of it goes, with
// the finish), what the service persisted, the session's window, and the
// time an attempt may take now.
type Pushed struct {
	Last      int64
	Final     bool
	Persisted int64
	Window    int64
	Timeout   time.Duration
}

// Stream is the channel of a resumable session's data, open until it
// breaks or the session ends. The session gives it the chunks to send;
// it reports acknowledgements and its failure to its sink, from
// goroutines of its own. Its methods run on the Writer's goroutine.
type Stream interface {
	// From is the offset the stream's next send starts at: what it sent
	// (a stream of messages), or what the service persisted (a stream
	// that sends all the rest in each request).
	From() int64
	// Send sends what is due of the data p describes, from From on:
	// whole messages only, or everything when all is set (then, once
	// p.final, the finish with the object's checksums too). rs are the
	// chunks that hold that data, in order; the stream reads them during
	// Send only, and takes its own references on what it sends. A stream
	// that cannot Send now (one PUT at a time) sends later: the session
	// calls Send again once it is idle.
	Send(p Pushed, rs []*ChunkRef, all bool) error
	// Idle reports whether nothing the stream sent awaits an answer.
	Idle() bool
	// Behind reports whether the stream has not sent all it was last
	// asked to (or not yet the finish of a final session).
	Behind() bool
	// Broken returns a context that ends when the stream fails, so a
	// Writer's wait for a buffer gives way to the session's recovery.
	Broken() context.Context
	// Route is where the stream went, for the session's next stream and
	// status queries (see [Transport.OpenStream]).
	Route() Route
	// Teardown ends the stream and waits for its goroutines; after it, no
	// report comes from the stream. It returns the failure that broke the
	// stream as the stream knows it (a status the service sent, an
	// attempt timeout) in place of cause, or cause.
	Teardown(cause error) error
	// Done waits until the stream has ended after the session finished
	// (the service's status), or ctx ends.
	Done(ctx context.Context)
}

// Request is what the transports read of one Request: where it goes (the
// target), its spec and whole-object checksums (complete before the
// upload's mode finishes it), and the lifetimes of its chunks, on which
// they take references while a request reads chunk memory. The Writer and
// its mode own and fill it; transports only read it, on the Writer's
// goroutine or while one of its calls runs, and write only the memory it
// lends them (Call).
type Request struct {
	Target
	Life    Lifetime
	Scratch Scratch      // also says whether messages carry a CRC32C
	Call    Call         // the transport's, for one call at a time
	One     [1]*ChunkRef // a one-shot upload's chunk, as writeObject takes it
	// App is an appendable object's state (WithAppendable), else nil.
	App *Appendable
}

// Checksums returns the whole-object Checksums the finish carries (in
// scratch), or nil: set when the last chunk is known ([Scratch.HasSums]).
func (u *Request) Checksums() *wire.ObjectChecksums {
	if !u.Scratch.HasSums {
		return nil
	}
	return &u.Scratch.Checksums
}

// Idempotent reports whether a one-shot upload may be repeated as a whole:
// only a precondition makes a second write of the same object harmless.
func (u *Request) Idempotent() bool {
	s := &u.Scratch.Spec
	return s.IfGenerationMatch != nil || s.IfGenerationNotMatch != nil ||
		s.IfMetagenerationMatch != nil || s.IfMetagenerationNotMatch != nil
}

// NoCRC reports whether messages go without a CRC32C (WithoutCRC32C).
func (u *Request) NoCRC() bool { return u.Scratch.NoCRC }

// Spec returns the object's WriteObjectSpec, as Spec (the Writer) completed
// it.
func (u *Request) Spec() *wire.WriteObjectSpec { return &u.Scratch.Spec }

// ErrChunkTimeout is the cause of a stream cancelled because a sent chunk saw
// no acknowledgement within the attempt timeout. It carries
// DEADLINE_EXCEEDED, so ShouldRetry (and the official client's) retries it.
var ErrChunkTimeout = status.Error(codes.DeadlineExceeded, "no acknowledgement from the service within the attempt timeout")

// ErrFirstOpenLost is the failure of an appendable upload whose first
// stream, the one that creates the object, lost its answer: the service
// may have created the object, or may still (a front end that read the
// stream passes it on). Opening the object again would not help: that
// stream, arriving late, creates a new generation that replaces the one
// the upload goes on with, and every byte flushed there is lost. Nor can
// the object be taken up: only the generation the lost answer carried
// would tell it from another writer's. So the upload stops with an
// unknown outcome (the uploader marks it so); a Writer made anew creates
// the object again.
var ErrFirstOpenLost = status.Error(codes.Aborted, "the answer to the stream that creates the object was lost: the object may exist, and nothing tells it from another writer's")

// BucketPrefix starts a bucket's resource name.
const BucketPrefix = "projects/_/buckets/"
