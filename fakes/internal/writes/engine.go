package writes

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/internal/wire"
)

// Upload is one write as its server keeps it: a one-shot write, a
// resumable session or an appendable object. The fake's holds the bytes,
// the sink's only counts them; the Engine drives both the same way.
type Upload interface {
	// Lock and Unlock guard the upload; the engine holds the lock while it
	// calls the methods below and those of the stream (but the Open ones).
	Lock()
	Unlock()
	// Written is the write's State: the bytes so far and what was declared.
	Written() *State
	// Session is the resumable session's id, "" for any other write. It
	// does not change once the upload is shared.
	Session() string
	// Appending is the writer state of an appendable object, nil for any
	// other write. It does not change once the upload is shared.
	Appending() *Appendable
	// Done returns the object once finalized (nil before), and whether the
	// write is gone: a session dropped after a failure it cannot recover
	// from, an appendable object replaced.
	Done() (result *wire.Object, gone bool)
	// Drop ends a resumable session after a failure it cannot recover
	// from: it is gone, its content is released and it is forgotten. A
	// one-shot write, which ends with its stream, is left as it is.
	Drop()
}

// Stream is what a WriteObject or BidiWriteObject stream does for the
// Engine: open its write, take a message's bytes (the fake stores them,
// the sink counts and drops them), persist an appendable object's, and
// commit the finished object. All but the Open methods (NewUpload,
// Resume, OpenAppendable, OpenAppend) are called with the upload locked.
type Stream interface {
	// NewUpload validates the write_object_spec of the first message m, of
	// a write that is not appendable, and returns its upload.
	NewUpload(m *api.WriteMsg) (Upload, error)
	// Resume returns the resumable session id.
	Resume(id string) (Upload, error)
	// OpenAppendable creates the appendable object of the first message m
	// and makes the stream its writer; OpenAppend reopens the one its
	// append_object_spec names (see Appendable.Reopen).
	OpenAppendable(m *api.WriteMsg) (Upload, error)
	OpenAppend(m *api.WriteMsg) (Upload, error)
	// Epoch is the writer epoch the stream writes an appendable object as.
	Epoch() uint64

	// Check runs before a message's bytes are taken (and before a
	// finish_write without bytes is checked); Accept checks the bytes of
	// a message that carries checksummed_data and takes them (State.Add);
	// Checked runs once they are taken. An error ends the stream.
	Check(m *api.WriteMsg) error
	Accept(m *api.WriteMsg) error
	Checked() error

	// Persist persists the bytes of an appendable object received so far,
	// on a flush or a clean half-close.
	Persist() error
	// Finalize commits a write that is not appendable at its finish_write
	// (see the Finalize function); FinalizeAppendable finalizes an
	// appendable object.
	Finalize() (*wire.Object, error)
	FinalizeAppendable() (*wire.Object, error)
}

// Engine is the state machine of one WriteObject or BidiWriteObject
// stream, the same in the fake and the sink: its first message opens a
// one-shot write (write_object_spec), resumes a session (upload_id),
// creates an appendable object or reopens one (append_object_spec); each
// message then passes the checks of State at the offset where the write's
// bytes end, a flush persists an appendable object's bytes, a state lookup
// or a retried finish_write of a finalized write gets the object, and
// finish_write commits. Its zero value is not usable: set Stream, and
// Bidi for a BidiWriteObject stream. An Engine serves one stream: its
// methods are not safe for concurrent use.
type Engine struct {
	Stream Stream
	Bidi   bool
	up     Upload
}

// Handle processes the message m, which carries checksummed_data if
// hasData, of n content bytes. It returns the object once the write is
// finalized (the stream must then end), else the persisted size.
func (e *Engine) Handle(m *api.WriteMsg, n int64, hasData bool) (*wire.Object, int64, error) {
	if e.up == nil {
		up, err := e.open(m)
		if err != nil {
			return nil, 0, err
		}
		e.up = up
	} else if m.First {
		return nil, 0, api.ErrLateFirst
	}
	up, st := e.up, e.Stream
	a := up.Appending()
	up.Lock()
	defer up.Unlock()
	s := up.Written()
	result, gone := up.Done()
	switch {
	case gone:
		return nil, 0, errGone(up, a)
	case a != nil && a.Fenced(st, st.Epoch()) != nil:
		return nil, 0, a.Fenced(st, st.Epoch())
	case a != nil && m.Sums != nil && !m.Finish:
		return nil, 0, ErrAppendSums
	}
	if result != nil {
		// Finalized by an earlier stream. A resumable session answers
		// any message with the object, its data dropped: storage.proto
		// (WriteObject) says "Attempting to resume an already finalized
		// object results in an OK status, with a WriteObjectResponse
		// containing the finalized object's metadata", and Google's
		// testbench answers a BidiWriteObject so at its first message. No
		// second generation is ever stored. An appendable object's writer
		// gets the object for a retried finish_write or a state lookup,
		// and may resend bytes persisted; more data cannot fit.
		if a == nil {
			return result, s.Size, nil
		}
		if n > 0 && m.Offset+n > s.Size {
			return nil, 0, status.Errorf(codes.FailedPrecondition, "upload of %q is already finalized", result.GetName())
		}
		if m.Finish || m.Lookup {
			return result, s.Size, nil
		}
		return nil, s.Size, nil
	}
	if err := st.Check(m); err != nil {
		return nil, 0, err
	}
	if hasData {
		if err := st.Accept(m); err != nil {
			return nil, 0, err
		}
	} else if m.Finish {
		if err := checkFinish(s, a != nil, m.Offset); err != nil {
			return nil, 0, err
		}
	}
	if err := st.Checked(); err != nil {
		return nil, 0, err
	}
	s.Declare(m.Sums)
	if !m.Finish {
		if a != nil && m.Flush {
			if err := st.Persist(); err != nil {
				return nil, 0, err
			}
		}
		return nil, s.Size, nil
	}
	var (
		obj *wire.Object
		err error
	)
	if a != nil {
		obj, err = st.FinalizeAppendable()
	} else {
		obj, err = st.Finalize()
	}
	return obj, s.Size, err
}

// open starts the stream's write from its first message.
func (e *Engine) open(m *api.WriteMsg) (Upload, error) {
	st := e.Stream
	switch {
	case m.Spec.GetAppendable() && e.Bidi:
		return st.OpenAppendable(m)
	case m.Spec.GetAppendable():
		return nil, status.Error(codes.InvalidArgument, "write_object_spec.appendable: appendable objects are written with BidiWriteObject, not WriteObject")
	case m.Spec != nil:
		return st.NewUpload(m)
	case m.UploadID != "":
		if err := api.CheckCommon(m.Common); err != nil {
			return nil, err
		}
		return st.Resume(m.UploadID)
	case m.AppendSpec != nil && e.Bidi:
		return st.OpenAppend(m)
	default:
		return nil, status.Error(codes.InvalidArgument, "the first message must set upload_id, write_object_spec or append_object_spec")
	}
}

// CheckSpec checks the write_object_spec of a write, with its common
// parameters, as far as neither the bucket nor the object matters: the
// resource, the bucket and object names, object_size, and no
// customer-supplied encryption key. It returns the bare bucket name once
// that parsed, even with an error about the rest.
func CheckSpec(spec *wire.WriteObjectSpec, common *wire.CommonObjectRequestParams) (bucket string, err error) {
	res := spec.GetResource()
	if res == nil {
		return "", status.Error(codes.InvalidArgument, "write_object_spec.resource is required")
	}
	if bucket, err = api.ParseBucket(res.GetBucket()); err != nil {
		return "", err
	}
	if err := api.CheckObjectName(res.GetName()); err != nil {
		return bucket, err
	}
	if spec.ObjectSize != nil && *spec.ObjectSize < 0 {
		return bucket, status.Errorf(codes.InvalidArgument, "object_size is %d", *spec.ObjectSize)
	}
	return bucket, api.CheckCommon(common)
}

// End handles the client's half-close of a stream that did not finish: a
// resumable session reports its persisted size, an appendable object's
// writer persists what it sent and reports it, a one-shot write fails.
// It returns the object if the write was finalized (by an earlier stream).
func (e *Engine) End() (*wire.Object, int64, error) {
	up := e.up
	if up == nil {
		return nil, 0, status.Error(codes.InvalidArgument, "stream closed before its first message")
	}
	a := up.Appending()
	if a == nil && up.Session() == "" {
		return nil, 0, status.Error(codes.InvalidArgument, "stream closed without finish_write: a non-resumable write must finish on its stream; nothing stored")
	}
	up.Lock()
	defer up.Unlock()
	result, gone := up.Done()
	switch {
	case gone:
		return nil, 0, errGone(up, a)
	case a != nil && result == nil && a.Writer == any(e.Stream):
		if err := e.Stream.Persist(); err != nil { // a clean half-close persists
			return nil, 0, err
		}
	}
	return result, up.Written().Size, nil
}

// checkFinish checks a finish_write without content at offset. An
// appendable object's writer may send it without a write_offset (as it
// sends flush and state_lookup): any offset up to the bytes received is
// taken, as the service and the testbench take it (the official Python
// client's appendable writer finalizes with write_offset 0); one past them
// still leaves a gap. Any other write must finish where its bytes end.
func checkFinish(s *State, appendable bool, offset int64) error {
	if appendable && offset >= 0 && offset <= s.Size {
		return nil
	}
	return s.CheckFinish(offset)
}

// errGone is the error for a message, or a half-close, of the write up
// once it is gone; a is its writer state if appendable.
func errGone(up Upload, a *Appendable) error {
	if a != nil {
		return a.ErrGone()
	}
	return status.Errorf(codes.NotFound, "upload %q no longer exists", up.Session())
}

// Finalize verifies the complete write up, which is not appendable, and
// commits it: commit stores (or counts) the object, whose MD5 is sum (nil
// if not hashed), and returns it; the MD5 is appended to buf. A write
// whose declared size does not match fails and may go on; one whose
// checksums do not match, or that commit refuses, is dropped (Upload.Drop).
// up's lock is held.
func Finalize(up Upload, buf []byte, commit func(sum []byte) (*wire.Object, error)) (*wire.Object, error) {
	s := up.Written()
	if err := s.CheckSize(); err != nil {
		return nil, err
	}
	sum, err := s.Finish(buf)
	var obj *wire.Object
	if err == nil {
		obj, err = commit(sum)
	}
	if err != nil {
		up.Drop()
		return nil, err
	}
	return obj, nil
}

// Query is QueryWriteStatus's answer for the resumable session up: its
// persisted size, or its object once finalized.
func Query(up Upload) (*wire.QueryWriteStatusResponse, error) {
	up.Lock()
	defer up.Unlock()
	result, gone := up.Done()
	return api.WriteStatus(gone, up.Session(), result, up.Written().Size)
}
