package uploader

import (
	"context"
	"time"

	"github.com/objup/objup/internal/wire"
)

// transport is the seam between the upload's logic, written once, and the
// API that carries it: storage v2 over gRPC (the default) or the JSON API
// over HTTP (WithHTTP). Each method makes ONE attempt of one call and
// reports what came back; the caller decides what happens next (retries,
// resumes, releases). A transport never sees the Writer: it gets the
// upload's request (what goes where, with which spec and checksums), the
// chunks to send, and a timeout for the attempt.
//
// connect-go's protocolClient is the model: the protocol sends, one caller
// decides.
type transport interface {
	// writeObject sends the whole object, the consecutive chunks rs, in
	// one request and returns the stored object. sent reports whether the
	// request may have left the process. It takes its own references on
	// the chunks' memory while the request reads it; the caller keeps its
	// own.
	writeObject(u *upload, rs []*chunkRef, timeout time.Duration) (o *wire.Object, sent bool, err error)
	// composeObject joins the objects srcs, in order, into u's object
	// (u's spec: its name, attributes and preconditions) and returns it.
	composeObject(u *upload, srcs []source, timeout time.Duration) (*wire.Object, error)
	// deleteObject deletes generation gen of object name in u's bucket.
	deleteObject(u *upload, name string, gen int64, timeout time.Duration) error
	// getObject returns the live object name of u's bucket (its
	// attributes), or a NotFound error.
	getObject(u *upload, name string, timeout time.Duration) (*wire.Object, error)
	// startUpload opens a resumable session for the upload and returns its
	// id (an upload id, or the session's URI).
	startUpload(u *upload, timeout time.Duration) (id string, err error)
	// queryStatus asks how much of session id the service persisted, or
	// the object it finished. size is the object's size if known, else
	// -1. route is where the session's streams went (see stream.route),
	// nil before the first.
	queryStatus(u *upload, id string, route any, size int64, timeout time.Duration) (persisted int64, o *wire.Object, err error)
	// openStream opens the channel on which session id's data goes, from
	// the persisted offset on: a BidiWriteObject stream, or a sequence of
	// PUTs. The stream reads the data to send from sink and reports to it.
	// route is where the session's earlier streams went, nil before the
	// first; timeout bounds each send's wait for its acknowledgement.
	openStream(u *upload, id string, route any, persisted int64, sink streamSink, timeout time.Duration) (stream, error)
	// cancelUpload makes one attempt to cancel session id
	// (CancelResumableWrite, or a DELETE of the session's URI). nil means
	// that the service cancelled it: nothing of the session can be
	// finalized from then on, whatever message of it arrives late. Any
	// error (a finalized session, one the service does not know, a
	// failure) leaves the outcome to a status query.
	cancelUpload(u *upload, id string, timeout time.Duration) error
	// window returns how many bytes a session may have pushed and not
	// persisted when perSend bytes go out in one send.
	window(perSend int64) int64
	// names returns the names of the transport's calls, for errors and
	// events.
	names() *callNames
	// close releases the transport's connections.
	close() error
}

// callNames are the names of a transport's calls, as errors and events
// report them.
type callNames struct {
	write, start, query, stream, compose, delete string
}

// source is an object a compose joins: its name and the generation that
// was written.
type source struct {
	name string
	gen  int64
}

var (
	grpcNames = callNames{write: "WriteObject", start: "StartResumableWrite", query: "QueryWriteStatus", stream: "BidiWriteObject", compose: "ComposeObject", delete: "DeleteObject"}
	httpNames = callNames{write: "objects.insert", start: "objects.insert", query: "objects.insert (status)", stream: "objects.insert", compose: "objects.compose", delete: "objects.delete"}
)

// streamSink is what a stream sees of its session: where it reads the
// data to send and where it reports. A stream's goroutines call it; it
// takes only the session's own lock, never one of the stream's, and calls
// nothing of the stream back, so the seam points one way: the session
// drives the stream, the stream reports.
type streamSink interface {
	// unsent appends to batch the chunks that hold data from offset from
	// on, in order.
	unsent(from int64, batch []*chunkRef) []*chunkRef
	// ack reports the bytes the service persisted and, once finished,
	// the object; an error is an answer the session cannot accept.
	ack(persisted int64, o *wire.Object) error
	// broke reports why the stream failed, once.
	broke(err error)
	// signal wakes the session: the stream can take more (a stream that
	// sends one request at a time became idle).
	signal()
}

// pushed is what the session has pushed when it has its stream send: the
// end of the data, whether the last chunk is in (then all of it goes, with
// the finish), what the service persisted, the session's window, and the
// time an attempt may take now.
type pushed struct {
	last      int64
	final     bool
	persisted int64
	window    int64
	timeout   time.Duration
}

// stream is the channel of a resumable session's data, open until it
// breaks or the session ends. It reads the chunks to send from its sink
// and reports acknowledgements and its failure to it, from goroutines of
// its own. Its methods run on the Writer's goroutine.
type stream interface {
	// send sends what is due of the data p describes, from where the
	// stream stands: whole messages only, or everything when all is set
	// (then, once p.final, the finish with the object's checksums too). A
	// stream that cannot send now (one PUT at a time) sends later: the
	// session calls send again once it is idle.
	send(p pushed, all bool) error
	// idle reports whether nothing the stream sent awaits an answer.
	idle() bool
	// behind reports whether the stream has not sent all it was last
	// asked to (or not yet the finish of a final session).
	behind() bool
	// broken returns a context that ends when the stream fails, so a
	// Writer's wait for a buffer gives way to the session's recovery.
	broken() context.Context
	// route is where the stream went, for the session's next stream and
	// status queries (see transport.openStream).
	route() any
	// teardown ends the stream and waits for its goroutines; after it, no
	// report comes from the stream. It returns the failure that broke the
	// stream as the stream knows it (a status the service sent, an
	// attempt timeout) in place of cause, or cause.
	teardown(cause error) error
	// done waits until the stream has ended after the session finished
	// (the service's status), or ctx ends.
	done(ctx context.Context)
}

// upload is what the transports read of one upload: where it goes (the
// target), its spec and whole-object checksums (complete once the first
// chunk is known), and the lifetimes of its chunks, on which they take
// references while a request reads chunk memory. The Writer owns and fills
// it; transports only read it, on the Writer's goroutine or while one of
// its calls runs.
type upload struct {
	target
	life    lifetime
	scratch scratch      // also says whether messages carry a CRC32C
	one     [1]*chunkRef // a one-shot upload's chunk, as writeObject takes it
	// app is an appendable object's state (WithAppendable), else nil.
	app *appendState
}

// checksums returns the whole-object checksums the finish carries (in
// scratch), or nil: set when the last chunk is known (scratch.hasSums).
func (u *upload) checksums() *wire.ObjectChecksums {
	if !u.scratch.hasSums {
		return nil
	}
	return &u.scratch.checksums
}

// idempotent reports whether a one-shot upload may be repeated as a whole:
// only a precondition makes a second write of the same object harmless.
func (u *upload) idempotent() bool {
	s := &u.scratch.spec
	return s.IfGenerationMatch != nil || s.IfGenerationNotMatch != nil ||
		s.IfMetagenerationMatch != nil || s.IfMetagenerationNotMatch != nil
}

// noCRC reports whether messages go without a CRC32C (WithoutCRC32C).
func (u *upload) noCRC() bool { return u.scratch.noCRC }

// spec returns the object's WriteObjectSpec, as spec (the Writer) completed
// it.
func (u *upload) spec() *wire.WriteObjectSpec { return &u.scratch.spec }
