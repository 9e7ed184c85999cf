package uploader

import (
	"context"

	"github.com/objup/objup/internal/wire"
)

// transport is the seam between the Writer's loop, written once, and the
// API that carries an upload: storage v2 over gRPC (the default) or the JSON
// API over HTTP (WithHTTP). It sends the two kinds of upload and nothing
// else; the Writer owns buffers, checksums, retries and telemetry.
type transport interface {
	// oneShot sends the whole object, r, in one request, retried by the
	// Writer's retrier, and returns the stored object. It does not drop
	// the Writer's reference on r.
	oneShot(w *Writer, r *chunkRef) (*wire.Object, error)
	// startSession opens a resumable session; first is the start of the
	// data, for content sniffing.
	startSession(w *Writer, first []byte) (uploadSession, error)
	// close releases the transport's connections.
	close() error
}

// uploadSession is a resumable upload as the Writer's loop drives it.
type uploadSession interface {
	// push takes over a full chunk and sends it when it is due; it may
	// wait while too much is in flight.
	push(r *chunkRef) error
	// flush sends what push kept back, for a Writer about to wait for a
	// buffer that only an acknowledgement can free.
	flush() error
	// finish takes over the last chunk, finalizes the object with the
	// given whole-object checksums, and returns it.
	finish(r *chunkRef, checksums *wire.ObjectChecksums) (*wire.Object, error)
	// waitContext ends when the session's connection breaks, so a wait
	// for a buffer gives way to recover.
	waitContext() context.Context
	// recover resumes after a break.
	recover() error
	// abort abandons the upload: it is never finalized.
	abort(cause error)
	// close releases the session's hold on every chunk.
	close()
}

// grpcTransport sends uploads over storage v2 gRPC: a one-shot WriteObject,
// or a resumable session streamed on BidiWriteObject.
type grpcTransport struct{ c *Client }

func (g grpcTransport) oneShot(w *Writer, r *chunkRef) (*wire.Object, error) { return w.grpcOneShot(r) }

func (g grpcTransport) startSession(w *Writer, first []byte) (uploadSession, error) {
	return w.startSession(first)
}

func (g grpcTransport) close() error { return g.c.conn.Close() }
