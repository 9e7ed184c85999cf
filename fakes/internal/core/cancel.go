package core

// Cancelling a resumable session, over either API.
//
// Google's storage-testbench answers CancelResumableWrite with OK and the
// JSON API's DELETE on a session URI with 499, for any session it knows,
// finished or not, and NOT_FOUND (404) for an id it does not
// (testbench/grpc_server.py CancelResumableWrite, rest_server.py
// delete_resumable_upload, database.py delete_upload). storage.proto:
// "Any attempts to write to the resumable upload after cancelling the
// upload fail." After a cancel the testbench forgets the session, so a
// later write, status query or cancel of it is NOT_FOUND over gRPC (404
// over JSON); GCS itself answers a JSON session URI that was cancelled
// with 499 to its PUTs and status queries (as observed and reported in
// fsouza/fake-gcs-server#1813 and getsentry/objectstore#609). The fake
// answers so: over gRPC NOT_FOUND, over JSON 499.
//
// A session already finalized is not changed by a cancel: the object
// stays, and the session keeps answering with it (QueryWriteStatus, a
// retried finish_write, a PUT), as storage.proto requires ("Attempting
// to resume an already finalized object results in an OK status, with a
// WriteObjectResponse containing the finalized object's metadata"); the
// cancel is answered as the testbench answers it (OK, 499). Whatever
// arrives late on a session, finalized or cancelled, never stores a
// second generation. The method's name is MethodCancelResumableWrite.

// cancelSession cancels the session up, unless it is finalized, and
// reports whether it was. A cancelled session stores nothing, drops its
// content and stays known as cancelled among the finalized sessions the
// server remembers. up.mu is held.
func (s *Core) CancelSession(up *Upload) (finalized bool) {
	if up.Stored != nil {
		return true
	}
	if !up.Cancelled {
		up.Gone, up.Cancelled, up.chunks = true, true, nil
		s.saveSessionState(up)
		s.Resumables.Retire(up.ID, KeepFinalized)
	}
	return false
}
