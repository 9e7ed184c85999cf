package fakes

import (
	"context"
	"crypto/rand"
	"errors"
	"hash/crc32"
	"io"
	"maps"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/retrytest"
	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/fakes/internal/writes"
	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/internal/wire"
)

// newUpload validates a WriteObjectSpec that method received and returns
// an upload for it.
func (s *Server) newUpload(ctx context.Context, spec *wire.WriteObjectSpec, common *wire.CommonObjectRequestParams, method string) (*upload, error) {
	res := spec.GetResource()
	if res == nil {
		return nil, status.Error(codes.InvalidArgument, "write_object_spec.resource is required")
	}
	if spec.GetAppendable() && method != MethodBidiWriteObject {
		return nil, status.Errorf(codes.InvalidArgument, "write_object_spec.appendable: appendable objects are written with BidiWriteObject, not %s", method)
	}
	bucket, err := api.ParseBucket(res.GetBucket())
	if err != nil {
		return nil, err
	}
	noteTarget(ctx, bucket, res.GetName())
	if err := api.CheckObjectName(res.GetName()); err != nil {
		return nil, err
	}
	if spec.ObjectSize != nil && *spec.ObjectSize < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "object_size is %d", *spec.ObjectSize)
	}
	if err := api.CheckCommon(common); err != nil {
		return nil, err
	}
	b, err := s.store.Bucket(bucket)
	if err != nil {
		return nil, err
	}
	if b.Zonal() && !spec.GetAppendable() {
		return nil, store.ErrZonal(bucket, method+" without write_object_spec.appendable")
	}
	if err := s.admitGRPC(ctx, bucket, res.GetName()); err != nil {
		return nil, err
	}
	a := specAttrs(spec)
	if a.Extra, err = specExtra(spec); err != nil {
		return nil, err
	}
	return newUpload(b, spec.GetResource().GetName(), a, api.SpecConditions(spec), spec.ObjectSize), nil
}

// specAttrs returns the attributes a write's spec gives its object, but
// the rarely set ones (specExtra).
func specAttrs(spec *wire.WriteObjectSpec) store.Attrs {
	res := spec.GetResource()
	a := store.Attrs{
		ContentType:        res.GetContentType(),
		ContentEncoding:    res.GetContentEncoding(),
		ContentDisposition: res.GetContentDisposition(),
		ContentLanguage:    res.GetContentLanguage(),
		CacheControl:       res.GetCacheControl(),
		StorageClass:       res.GetStorageClass(),
		Metadata:           maps.Clone(res.GetMetadata()),
	}
	if ct := res.GetCustomTime(); ct != nil {
		a.CustomTime = ct.AsTime().UnixMicro()
	}
	return a
}

// writeStream is the state of one WriteObject or BidiWriteObject stream.
type writeStream struct {
	s      *Server
	ctx    context.Context
	method string
	up     *upload

	brk      breakRule
	hasBrk   bool
	received int64 // object bytes accepted on this stream

	// Appendable objects (see append.go).
	rc           *retrytest.Call // the stream's retry test, for redirects
	epoch        uint64          // the writer epoch the stream writes as
	sendResource bool            // the first response carries the object: the stream created or took it over
	redir        redirectRule    // a RedirectAppend fault, if hasRedir
	hasRedir     bool
}

func (s *Server) newWriteStream(ctx context.Context, method string) *writeStream {
	w := &writeStream{s: s, ctx: ctx, method: method}
	w.brk, w.hasBrk = s.faults.takeBreak(method)
	return w
}

// handle processes one message. It returns the object once the write is
// finalized (the stream must then end), else the persisted size.
func (w *writeStream) handle(m *api.WriteMsg) (*wire.Object, int64, error) {
	if w.up == nil {
		if err := w.open(m); err != nil {
			return nil, 0, err
		}
	} else if m.First {
		return nil, 0, api.ErrLateFirst
	}
	up := w.up
	up.mu.Lock()
	defer up.mu.Unlock()
	switch {
	case up.gone && up.appendable:
		return nil, 0, up.errGone()
	case up.gone:
		return nil, 0, status.Errorf(codes.NotFound, "upload %q no longer exists", up.id)
	case up.appendable && up.app.Fenced(w, w.epoch) != nil:
		return nil, 0, up.app.Fenced(w, w.epoch)
	case up.appendable && m.Sums != nil && !m.Finish:
		return nil, 0, writes.ErrAppendSums
	}
	if up.result != nil {
		// Finalized by an earlier stream: a retried finish_write, or a
		// state lookup, gets the object; more data cannot fit (an
		// appendable object's writer may resend bytes persisted).
		if n := int64(len(m.Data.GetContent())); n > 0 && (!up.appendable || m.Offset+n > up.Size) {
			return nil, 0, status.Errorf(codes.FailedPrecondition, "upload of %q is already finalized", up.object)
		}
		if m.Finish || m.Lookup {
			return up.result, up.Size, nil
		}
		return nil, up.Size, nil
	}
	if w.hasBrk && w.received >= w.brk.after {
		return nil, 0, w.broken()
	}
	if m.Data != nil {
		if _, err := w.accept(m); err != nil {
			return nil, 0, err
		}
		if w.hasBrk && w.received >= w.brk.after {
			return nil, 0, w.broken()
		}
	} else if m.Finish {
		if err := up.CheckFinish(m.Offset); err != nil {
			return nil, 0, err
		}
	}
	if w.hasRedir && w.received >= w.redir.after {
		return nil, 0, w.redirected()
	}
	up.Declare(m.Sums)
	if !m.Finish {
		if up.appendable && m.Flush {
			if err := up.persist(); err != nil {
				return nil, 0, err
			}
		}
		return nil, up.Size, nil
	}
	var (
		obj *wire.Object
		err error
	)
	if up.appendable {
		obj, err = up.finalizeAppendable()
	} else {
		obj, err = w.s.finalize(up, tenantOf(w.ctx))
	}
	return obj, up.Size, err
}

// open starts the stream's write from its first message.
func (w *writeStream) open(m *api.WriteMsg) error {
	var err error
	switch {
	case m.Spec.GetAppendable() && w.method == MethodBidiWriteObject:
		err = w.openAppendable(m)
	case m.Spec != nil:
		w.up, err = w.s.newUpload(w.ctx, m.Spec, m.Common, w.method)
		if err == nil {
			w.up.Declare(m.Sums)
		}
	case m.UploadID != "":
		if err = api.CheckCommon(m.Common); err == nil {
			w.up, err = w.s.session(w.ctx, m.UploadID)
		}
	case m.AppendSpec != nil:
		err = w.openAppend(m)
	default:
		err = status.Error(codes.InvalidArgument, "the first message must set upload_id, write_object_spec or append_object_spec")
	}
	if err == nil && w.up.appendable && w.rc != nil {
		err = w.rc.RedirectWrite(writes.Handle(w.up.app.Gen, w.epoch), w.up.app.Gen)
	}
	if err == nil && w.up.appendable && w.up.result == nil {
		w.redir, w.hasRedir = w.s.faults.takeRedirect()
	}
	return err
}

// accept checks one message's data and adds it to the upload, returning
// the count of bytes added. up.mu is held. An appendable object's writer
// may resend bytes already persisted: the overlap is dropped, as the
// service does; any other write must start where the data so far ends.
func (w *writeStream) accept(m *api.WriteMsg) (int64, error) {
	up := w.up
	content := m.Data.GetContent()
	n := int64(len(content))
	if err := up.CheckMessage(m.Offset, n, up.appendable); err != nil {
		return 0, err
	}
	if n > 0 && w.s.faults.takeCorrupt(w.method) {
		content[n/2] ^= 0xff // the message is ours: grpc decoded it into new memory
	}
	var crc uint32
	hasCRC := m.Data.Crc32C != nil
	if hasCRC {
		crc = crc32.Checksum(content, crc32c.Table)
		if err := writes.CheckCRC(m.Offset, n, *m.Data.Crc32C, crc); err != nil {
			return 0, err
		}
	}
	if skip := up.Size - m.Offset; skip > 0 {
		skip = min(skip, n)
		content, n, hasCRC = content[skip:], n-skip, false
	}
	if w.hasBrk && n > w.brk.after-w.received {
		n = w.brk.after - w.received
		content = content[:n]
		hasCRC = false
	}
	if n == 0 {
		return 0, nil
	}
	if hasCRC {
		up.add(content, crc)
	} else {
		up.addUnchecked(content)
	}
	w.received += n
	return n, nil
}

func (w *writeStream) broken() error {
	return status.Errorf(w.brk.code, "fakes: injected stream break after %d bytes", w.brk.after)
}

// end handles the client's half-close of a write stream that did not finish:
// a resumable session reports its persisted size, an appendable write
// persists what the stream sent and reports it, a one-shot write fails.
func (w *writeStream) end() (*wire.Object, int64, error) {
	if w.up == nil {
		return nil, 0, status.Error(codes.InvalidArgument, "stream closed before its first message")
	}
	if w.up.id == "" && !w.up.appendable {
		return nil, 0, status.Error(codes.InvalidArgument, "stream closed without finish_write: a non-resumable write must finish on its stream; nothing stored")
	}
	w.up.mu.Lock()
	defer w.up.mu.Unlock()
	switch {
	case w.up.gone && w.up.appendable:
		return nil, 0, w.up.errGone()
	case w.up.gone:
		return nil, 0, status.Errorf(codes.NotFound, "upload %q no longer exists", w.up.id)
	case w.up.appendable && w.up.result == nil && w.up.app.Writer == w:
		if err := w.up.persist(); err != nil {
			return nil, 0, err
		}
	}
	return w.up.result, w.up.Size, nil
}

// WriteObject implements the client-streaming write.
func (v *service) WriteObject(stream grpc.ClientStreamingServer[wire.WriteObjectRequest, wire.WriteObjectResponse]) error {
	w := v.s.newWriteStream(stream.Context(), MethodWriteObject)
	for {
		req, err := stream.Recv()
		var (
			obj  *wire.Object
			size int64
		)
		if errors.Is(err, io.EOF) {
			obj, size, err = w.end()
			if err != nil {
				return err
			}
			if err := v.s.faults.lost(MethodWriteObject); err != nil {
				return err
			}
			return stream.SendAndClose(api.WriteResponse(obj, size))
		}
		if err != nil {
			return err
		}
		m := api.WriteMsgOf(req)
		obj, _, err = w.handle(&m)
		if err != nil {
			return err
		}
		if obj != nil {
			if err := v.s.faults.lost(MethodWriteObject); err != nil {
				return err
			}
			return stream.SendAndClose(api.WriteResponse(obj, 0))
		}
	}
}

// BidiWriteObject implements the bidirectional write. An appendable write
// is answered after its first message too, and its responses carry what
// appendResponse says. A stream that ends without a half-close or a
// finish loses the appendable bytes it did not persist.
func (v *service) BidiWriteObject(stream grpc.BidiStreamingServer[wire.BidiWriteObjectRequest, wire.BidiWriteObjectResponse]) error {
	w := v.s.newWriteStream(stream.Context(), MethodBidiWriteObject)
	defer w.abandon()
	if g, ok := stream.(*grpc.GenericServerStream[wire.BidiWriteObjectRequest, wire.BidiWriteObjectResponse]); ok {
		w.rc = retrytest.CallOf(g.ServerStream)
	}
	for first := true; ; first = false {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			obj, size, err := w.end()
			if err != nil {
				return err
			}
			if obj != nil {
				if err := v.s.faults.lost(MethodBidiWriteObject); err != nil {
					return err
				}
			}
			if obj == nil && w.up.appendable {
				return stream.Send(w.appendResponse(false))
			}
			return stream.Send(api.BidiResponse(obj, size))
		}
		if err != nil {
			return err
		}
		m := api.BidiMsgOf(req)
		obj, size, err := w.handle(&m)
		if err != nil {
			return err
		}
		var resp *wire.BidiWriteObjectResponse
		switch {
		case obj != nil:
			if err := v.s.faults.lost(MethodBidiWriteObject); err != nil {
				return err
			}
			return stream.Send(api.BidiResponse(obj, 0))
		case w.up.appendable && (first || m.Lookup):
			resp = w.appendResponse(first)
		case m.Lookup:
			resp = api.BidiResponse(nil, size)
		}
		if resp != nil {
			if err := stream.Send(resp); err != nil {
				return err
			}
		}
	}
}

// StartResumableWrite opens a resumable session.
func (v *service) StartResumableWrite(ctx context.Context, req *wire.StartResumableWriteRequest) (*wire.StartResumableWriteResponse, error) {
	s := v.s
	up, err := s.newUpload(ctx, req.GetWriteObjectSpec(), req.GetCommonObjectRequestParams(), MethodStartResumableWrite)
	if err != nil {
		return nil, err
	}
	up.Declare(req.ObjectChecksums)
	up.id = rand.Text()
	s.sessions.Add(up.id, up)
	return &wire.StartResumableWriteResponse{UploadId: up.id}, nil
}

// QueryWriteStatus reports a session's persisted size, or its object once
// finalized.
func (v *service) QueryWriteStatus(ctx context.Context, req *wire.QueryWriteStatusRequest) (*wire.QueryWriteStatusResponse, error) {
	up, err := v.s.session(ctx, req.GetUploadId())
	if err != nil {
		return nil, err
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	return api.WriteStatus(up.gone, up.id, up.result, up.Size)
}
