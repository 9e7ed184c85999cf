package grpcfront

import (
	"context"
	"errors"
	"hash/crc32"
	"io"
	"maps"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/calls"
	"github.com/objup/objup/fakes/internal/core"
	"github.com/objup/objup/fakes/internal/retrytest"
	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/fakes/internal/writes"
	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/internal/wire"
)

// newUpload validates a WriteObjectSpec that method received and returns
// an upload for it.
func (s *Server) newUpload(ctx context.Context, spec *wire.WriteObjectSpec, common *wire.CommonObjectRequestParams, method string) (*core.Upload, error) {
	if spec.GetAppendable() && method != MethodBidiWriteObject {
		return nil, status.Errorf(codes.InvalidArgument, "write_object_spec.appendable: appendable objects are written with BidiWriteObject, not %s", method)
	}
	bucket, err := writes.CheckSpec(spec, common)
	if bucket != "" {
		calls.NoteTarget(ctx, bucket, spec.GetResource().GetName())
	}
	if err != nil {
		return nil, err
	}
	if err := core.CheckWrite(ctx); err != nil {
		return nil, err
	}
	res := spec.GetResource()
	b, err := s.Store.Bucket(bucket)
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
	return core.NewUpload(b, spec.GetResource().GetName(), a, core.OverwriteCond(ctx, api.SpecConditions(spec)), spec.ObjectSize), nil
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

// writeStream is the state of one WriteObject or BidiWriteObject stream:
// the write engine's Stream (writes.Engine drives it), which stores the
// bytes of its upload.
type writeStream struct {
	s      *Server
	ctx    context.Context
	method string
	up     *core.Upload
	eng    writes.Engine

	brk      calls.BreakRule
	hasBrk   bool
	received int64 // object bytes accepted on this stream

	// Appendable objects (see append.go).
	rc           *retrytest.Call    // the stream's retry test, for redirects
	epoch        uint64             // the writer epoch the stream writes as
	sendResource bool               // the first response carries the object: the stream created or took it over
	redir        calls.RedirectRule // a RedirectAppend fault, if hasRedir
	hasRedir     bool
}

func (s *Server) newWriteStream(ctx context.Context, method string) *writeStream {
	w := &writeStream{s: s, ctx: ctx, method: method}
	w.eng = writes.Engine{Stream: w, Bidi: method == MethodBidiWriteObject}
	w.brk, w.hasBrk = s.Faults.TakeBreak(method)
	return w
}

// handle processes one message (writes.Engine.Handle).
func (w *writeStream) handle(m *api.WriteMsg) (*wire.Object, int64, error) {
	return w.eng.Handle(m, int64(len(m.Data.GetContent())), m.Data != nil)
}

// NewUpload implements writes.Stream.
func (w *writeStream) NewUpload(m *api.WriteMsg) (writes.Upload, error) {
	up, err := w.s.newUpload(w.ctx, m.Spec, m.Common, w.method)
	return w.opened(up, err)
}

// Resume implements writes.Stream.
func (w *writeStream) Resume(id string) (writes.Upload, error) {
	up, err := w.s.Session(w.ctx, id)
	return w.opened(up, err)
}

// OpenAppendable implements writes.Stream.
func (w *writeStream) OpenAppendable(m *api.WriteMsg) (writes.Upload, error) {
	err := w.openAppendable(m)
	return w.opened(w.up, err)
}

// OpenAppend implements writes.Stream.
func (w *writeStream) OpenAppend(m *api.WriteMsg) (writes.Upload, error) {
	err := w.openAppend(m)
	return w.opened(w.up, err)
}

// opened makes up the stream's upload, if err is nil. A stream that
// writes an appendable object meets the redirects of its retry test and
// of the RedirectAppend faults.
func (w *writeStream) opened(up *core.Upload, err error) (writes.Upload, error) {
	if err != nil {
		return nil, err
	}
	w.up = up
	if up.Appendable && w.rc != nil {
		if err := w.rc.RedirectWrite(writes.Handle(up.App.Gen, w.epoch), up.App.Gen); err != nil {
			return nil, err
		}
	}
	if up.Appendable && up.Result == nil {
		w.redir, w.hasRedir = w.s.Faults.TakeRedirect()
	}
	return up, nil
}

// Epoch implements writes.Stream.
func (w *writeStream) Epoch() uint64 { return w.epoch }

// Check implements writes.Stream: a stream past its injected break fails.
func (w *writeStream) Check(*api.WriteMsg) error {
	if w.hasBrk && w.received >= w.brk.After {
		return w.broken()
	}
	return nil
}

// Accept implements writes.Stream: it checks one message's data and adds
// it to the upload, which keeps it. An appendable object's writer may
// resend bytes already persisted: the overlap is dropped, as the service
// does; any other write must start where the data so far ends.
func (w *writeStream) Accept(m *api.WriteMsg) error {
	up := w.up
	content := m.Data.GetContent()
	n := int64(len(content))
	if err := up.CheckMessage(m.Offset, n, up.Appendable); err != nil {
		return err
	}
	if n > 0 && w.s.Faults.TakeCorrupt(w.method) {
		content[n/2] ^= 0xff // the message is ours: grpc decoded it into new memory
	}
	var crc uint32
	hasCRC := m.Data.Crc32C != nil
	if hasCRC {
		crc = crc32.Checksum(content, crc32c.Table)
		if err := writes.CheckCRC(m.Offset, n, *m.Data.Crc32C, crc); err != nil {
			return err
		}
	}
	if skip := up.Size - m.Offset; skip > 0 {
		skip = min(skip, n)
		content, n, hasCRC = content[skip:], n-skip, false
	}
	if w.hasBrk && n > w.brk.After-w.received {
		n = w.brk.After - w.received
		content = content[:n]
		hasCRC = false
	}
	if n > 0 {
		if hasCRC {
			up.Add(content, crc)
		} else {
			up.AddUnchecked(content)
		}
		w.received += n
	}
	return w.Check(m)
}

// Checked implements writes.Stream: a stream past its injected redirect
// is redirected.
func (w *writeStream) Checked() error {
	if w.hasRedir && w.received >= w.redir.After {
		return w.redirected()
	}
	return nil
}

// Persist implements writes.Stream.
func (w *writeStream) Persist() error { return w.up.Persist() }

// Finalize implements writes.Stream: the object is stored.
func (w *writeStream) Finalize() (*wire.Object, error) {
	return w.s.Finalize(w.ctx, w.up, calls.TenantOf(w.ctx))
}

// FinalizeAppendable implements writes.Stream.
func (w *writeStream) FinalizeAppendable() (*wire.Object, error) {
	return w.up.FinalizeAppendable(w.ctx, &w.s.Commits)
}

func (w *writeStream) broken() error {
	return status.Errorf(w.brk.Code, "fakes: injected stream break after %d bytes", w.brk.After)
}

// WriteObject implements the client-streaming write.
func (v *Service) WriteObject(stream grpc.ClientStreamingServer[wire.WriteObjectRequest, wire.WriteObjectResponse]) error {
	w := v.S.newWriteStream(stream.Context(), MethodWriteObject)
	for {
		req, err := stream.Recv()
		var (
			obj  *wire.Object
			size int64
		)
		if errors.Is(err, io.EOF) {
			obj, size, err = w.eng.End()
			if err != nil {
				return err
			}
			if err := v.S.Faults.Lost(MethodWriteObject); err != nil {
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
			if err := v.S.Faults.Lost(MethodWriteObject); err != nil {
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
func (v *Service) BidiWriteObject(stream grpc.BidiStreamingServer[wire.BidiWriteObjectRequest, wire.BidiWriteObjectResponse]) error {
	w := v.S.newWriteStream(stream.Context(), MethodBidiWriteObject)
	defer w.abandon()
	if g, ok := stream.(*grpc.GenericServerStream[wire.BidiWriteObjectRequest, wire.BidiWriteObjectResponse]); ok {
		w.rc = retrytest.CallOf(g.ServerStream)
	}
	for first := true; ; first = false {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			obj, size, err := w.eng.End()
			if err != nil {
				return err
			}
			if obj != nil {
				if err := v.S.Faults.Lost(MethodBidiWriteObject); err != nil {
					return err
				}
			}
			if obj == nil && w.up.Appendable {
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
			if err := v.S.Faults.Lost(MethodBidiWriteObject); err != nil {
				return err
			}
			return stream.Send(api.BidiResponse(obj, 0))
		case w.up.Appendable && (first || m.Lookup):
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
func (v *Service) StartResumableWrite(ctx context.Context, req *wire.StartResumableWriteRequest) (*wire.StartResumableWriteResponse, error) {
	s := v.S
	up, err := s.newUpload(ctx, req.GetWriteObjectSpec(), req.GetCommonObjectRequestParams(), MethodStartResumableWrite)
	if err != nil {
		return nil, err
	}
	up.Declare(req.ObjectChecksums)
	if err := s.StartSession(up); err != nil {
		return nil, err
	}
	return &wire.StartResumableWriteResponse{UploadId: up.ID}, nil
}

// QueryWriteStatus reports a session's persisted size, or its object once
// finalized.
func (v *Service) QueryWriteStatus(ctx context.Context, req *wire.QueryWriteStatusRequest) (*wire.QueryWriteStatusResponse, error) {
	up, err := v.S.Session(ctx, req.GetUploadId())
	if err != nil {
		return nil, err
	}
	return writes.Query(up)
}
