package fakes

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"hash"
	"hash/crc32"

	"github.com/objup/objup/internal/crc32c"
	"io"
	"maps"
	"sync"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/internal/wire"
)

// upload is an object being written: a one-shot write (id == ""), which
// lives as long as its stream, or a resumable session, which lives in
// Server.uploads until it fails for good, or until keepFinalized sessions
// were finalized after it.
type upload struct {
	id             string
	bucket, object string
	spec           *wire.WriteObjectSpec

	mu     sync.Mutex
	sums   *wire.ObjectChecksums // declared whole-object checksums, if any
	chunks [][]byte              // the content of each accepted message, as received
	size   int64
	crc    uint32
	md5    hash.Hash
	result *wire.Object // set once finalized
	gone   bool         // resumable session removed after a final failure
}

// newUpload validates a WriteObjectSpec and returns an upload for it.
func (s *Server) newUpload(ctx context.Context, spec *wire.WriteObjectSpec, common *wire.CommonObjectRequestParams) (*upload, error) {
	res := spec.GetResource()
	if res == nil {
		return nil, status.Error(codes.InvalidArgument, "write_object_spec.resource is required")
	}
	if spec.GetAppendable() {
		return nil, status.Error(codes.Unimplemented, "appendable objects are not supported by the fake")
	}
	bucket, err := parseBucket(res.GetBucket())
	if err != nil {
		return nil, err
	}
	noteTarget(ctx, bucket, res.GetName())
	if err := checkObjectName(res.GetName()); err != nil {
		return nil, err
	}
	if spec.ObjectSize != nil && *spec.ObjectSize < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "object_size is %d", *spec.ObjectSize)
	}
	if err := checkCommon(common); err != nil {
		return nil, err
	}
	if _, err := s.checkBucket(res.GetBucket()); err != nil {
		return nil, err
	}
	return &upload{bucket: bucket, object: res.GetName(), spec: spec, md5: md5.New()}, nil
}

// session returns the resumable session id.
func (s *Server) session(ctx context.Context, id string) (*upload, error) {
	s.mu.Lock()
	up := s.uploads[id]
	s.mu.Unlock()
	if up == nil {
		return nil, status.Errorf(codes.NotFound, "upload %q not found", id)
	}
	noteTarget(ctx, up.bucket, up.object)
	return up, nil
}

// keepFinalized is how many finalized sessions the server remembers, for
// QueryWriteStatus and retried finish_writes; older ones are forgotten (the
// service keeps them for a week), which bounds the memory of long runs.
var keepFinalized = 4096

// retire records that a session was finalized, and forgets the oldest
// finalized sessions beyond keepFinalized.
func (s *Server) retire(up *upload) {
	if up.id == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finalized = append(s.finalized, up.id)
	if n := len(s.finalized) - keepFinalized; n > 0 {
		for _, id := range s.finalized[:n] {
			delete(s.uploads, id)
		}
		s.finalized = append(s.finalized[:0], s.finalized[n:]...)
	}
}

// drop removes a resumable session after a failure it cannot recover from.
// up.mu must be held.
func (s *Server) drop(up *upload) {
	if up.id == "" {
		return
	}
	up.gone = true
	up.chunks = nil
	s.mu.Lock()
	delete(s.uploads, up.id)
	s.mu.Unlock()
}

// writeMsg is what WriteObjectRequest and BidiWriteObjectRequest have in
// common.
type writeMsg struct {
	first      bool
	uploadID   string
	spec       *wire.WriteObjectSpec
	appendSpec bool
	common     *wire.CommonObjectRequestParams
	offset     int64
	data       *wire.ChecksummedData
	sums       *wire.ObjectChecksums
	finish     bool
	lookup     bool
}

func writeMsgOf(r *wire.WriteObjectRequest) writeMsg {
	return writeMsg{
		first:    r.FirstMessage != nil,
		uploadID: r.GetUploadId(),
		spec:     r.GetWriteObjectSpec(),
		common:   r.GetCommonObjectRequestParams(),
		offset:   r.GetWriteOffset(),
		data:     r.GetChecksummedData(),
		sums:     r.GetObjectChecksums(),
		finish:   r.GetFinishWrite(),
	}
}

func bidiMsgOf(r *wire.BidiWriteObjectRequest) writeMsg {
	return writeMsg{
		first:      r.FirstMessage != nil,
		uploadID:   r.GetUploadId(),
		spec:       r.GetWriteObjectSpec(),
		appendSpec: r.GetAppendObjectSpec() != nil,
		common:     r.GetCommonObjectRequestParams(),
		offset:     r.GetWriteOffset(),
		data:       r.GetChecksummedData(),
		sums:       r.GetObjectChecksums(),
		finish:     r.GetFinishWrite(),
		lookup:     r.GetStateLookup(),
	}
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
}

func (s *Server) newWriteStream(ctx context.Context, method string) *writeStream {
	w := &writeStream{s: s, ctx: ctx, method: method}
	w.brk, w.hasBrk = s.faults.takeBreak(method)
	return w
}

// handle processes one message. It returns the object once the write is
// finalized (the stream must then end), else the persisted size.
func (w *writeStream) handle(m *writeMsg) (*wire.Object, int64, error) {
	if w.up == nil {
		if err := w.open(m); err != nil {
			return nil, 0, err
		}
	} else if m.first {
		return nil, 0, status.Error(codes.InvalidArgument, "upload_id or write_object_spec is allowed only in the first message of a stream")
	}
	up := w.up
	up.mu.Lock()
	defer up.mu.Unlock()
	if up.gone {
		return nil, 0, status.Errorf(codes.NotFound, "upload %q no longer exists", up.id)
	}
	if up.result != nil {
		// Finalized by an earlier stream: a retried finish_write, or a
		// state lookup, gets the object; more data cannot fit.
		if len(m.data.GetContent()) > 0 {
			return nil, 0, status.Errorf(codes.FailedPrecondition, "upload %q is already finalized", up.id)
		}
		if m.finish || m.lookup {
			return up.result, up.size, nil
		}
		return nil, up.size, nil
	}
	if w.hasBrk && w.received >= w.brk.after {
		return nil, 0, w.broken()
	}
	if m.data != nil {
		if err := w.accept(m); err != nil {
			return nil, 0, err
		}
		if w.hasBrk && w.received >= w.brk.after {
			return nil, 0, w.broken()
		}
	} else if m.finish && m.offset != up.size {
		return nil, 0, offsetError(m.offset, up.size, "finish_write")
	}
	if m.sums != nil {
		up.sums = mergeSums(up.sums, m.sums)
	}
	if !m.finish {
		return nil, up.size, nil
	}
	obj, err := w.s.finalize(up)
	return obj, up.size, err
}

// open starts the stream's write from its first message.
func (w *writeStream) open(m *writeMsg) error {
	var err error
	switch {
	case m.spec != nil:
		w.up, err = w.s.newUpload(w.ctx, m.spec, m.common)
		if err == nil && m.sums != nil {
			w.up.sums = mergeSums(nil, m.sums)
		}
	case m.uploadID != "":
		if err = checkCommon(m.common); err == nil {
			w.up, err = w.s.session(w.ctx, m.uploadID)
		}
	case m.appendSpec:
		err = status.Error(codes.Unimplemented, "appendable objects (append_object_spec) are not supported by the fake")
	default:
		err = status.Error(codes.InvalidArgument, "the first message must set upload_id or write_object_spec")
	}
	return err
}

// accept checks one message's data and adds it to the upload. up.mu is held.
func (w *writeStream) accept(m *writeMsg) error {
	up := w.up
	content := m.data.GetContent()
	n := int64(len(content))
	if n > maxChunk {
		return status.Errorf(codes.InvalidArgument, "message content of %d bytes exceeds the limit of %d", n, maxChunk)
	}
	if m.offset != up.size {
		return offsetError(m.offset, up.size, "write_offset")
	}
	if lim := up.spec.ObjectSize; lim != nil && up.size+n > *lim {
		return status.Errorf(codes.InvalidArgument, "data beyond object_size: %d bytes received, then %d more, object_size is %d", up.size, n, *lim)
	}
	if n > 0 && w.s.faults.takeCorrupt(w.method) {
		content[n/2] ^= 0xff // the message is ours: grpc decoded it into new memory
	}
	var crc uint32
	hasCRC := m.data.Crc32C != nil
	if hasCRC {
		crc = crc32.Checksum(content, crc32c.Table)
		if crc != *m.data.Crc32C {
			return status.Errorf(codes.DataLoss, "CRC32C mismatch in the message at offset %d (%d bytes): sent %#08x, computed %#08x", m.offset, n, *m.data.Crc32C, crc)
		}
	}
	if w.hasBrk && n > w.brk.after-w.received {
		n = w.brk.after - w.received
		content = content[:n]
		hasCRC = false
	}
	if n == 0 {
		return nil
	}
	if hasCRC {
		up.crc = crc32c.Combine(up.crc, crc, n)
	} else {
		up.crc = crc32.Update(up.crc, crc32c.Table, content)
	}
	up.md5.Write(content)
	up.chunks = append(up.chunks, content)
	up.size += n
	w.received += n
	return nil
}

func (w *writeStream) broken() error {
	return status.Errorf(w.brk.code, "fakes: injected stream break after %d bytes", w.brk.after)
}

func offsetError(offset, size int64, field string) error {
	if offset > size {
		return status.Errorf(codes.InvalidArgument, "%s %d leaves a gap: %d bytes received so far", field, offset, size)
	}
	return status.Errorf(codes.InvalidArgument, "%s %d overlaps the %d bytes received so far", field, offset, size)
}

// mergeSums returns the declared checksums with those of next added.
func mergeSums(prev, next *wire.ObjectChecksums) *wire.ObjectChecksums {
	out := &wire.ObjectChecksums{}
	if prev != nil {
		out.Crc32C, out.Md5Hash = prev.Crc32C, prev.Md5Hash
	}
	if next.Crc32C != nil {
		out.Crc32C = next.Crc32C
	}
	if len(next.Md5Hash) > 0 {
		out.Md5Hash = next.Md5Hash
	}
	return out
}

// end handles the client's half-close of a write stream that did not finish:
// a resumable session reports its persisted size, a one-shot write fails.
func (w *writeStream) end() (*wire.Object, int64, error) {
	if w.up == nil {
		return nil, 0, status.Error(codes.InvalidArgument, "stream closed before its first message")
	}
	if w.up.id == "" {
		return nil, 0, status.Error(codes.InvalidArgument, "stream closed without finish_write: a non-resumable write must finish on its stream; nothing stored")
	}
	w.up.mu.Lock()
	defer w.up.mu.Unlock()
	if w.up.gone {
		return nil, 0, status.Errorf(codes.NotFound, "upload %q no longer exists", w.up.id)
	}
	return w.up.result, w.up.size, nil
}

// finalize verifies a complete upload and stores it. up.mu is held.
func (s *Server) finalize(up *upload) (*wire.Object, error) {
	if lim := up.spec.ObjectSize; lim != nil && *lim != up.size {
		return nil, status.Errorf(codes.InvalidArgument, "finish_write after %d bytes, but object_size is %d", up.size, *lim)
	}
	sum := up.md5.Sum(nil)
	if want := up.sums; want != nil {
		if want.Crc32C != nil && *want.Crc32C != up.crc {
			s.drop(up)
			return nil, status.Errorf(codes.DataLoss, "object CRC32C mismatch: sent %#08x, computed %#08x over %d bytes; nothing stored", *want.Crc32C, up.crc, up.size)
		}
		if len(want.Md5Hash) > 0 && !bytes.Equal(want.Md5Hash, sum) {
			s.drop(up)
			return nil, status.Errorf(codes.DataLoss, "object MD5 mismatch: sent %x, computed %x over %d bytes; nothing stored", want.Md5Hash, sum, up.size)
		}
	}
	obj, err := s.store(up, sum)
	if err != nil {
		s.drop(up)
		return nil, err
	}
	up.result, up.chunks, up.md5 = obj, nil, nil
	s.retire(up)
	return obj, nil
}

// store writes a verified upload into fake-gcs-server's backend, checking the
// preconditions under the backend's lock, and returns the stored object. The
// backend copies the content once (into one slice); the chunks are not
// joined before.
func (s *Server) store(up *upload, md5sum []byte) (*wire.Object, error) {
	res := up.spec.GetResource()
	now := time.Now().UTC().Truncate(time.Microsecond)
	attrs := fakestorage.ObjectAttrs{
		BucketName:         up.bucket,
		Name:               up.object,
		Size:               up.size,
		StorageClass:       res.GetStorageClass(),
		ContentType:        res.GetContentType(),
		ContentEncoding:    res.GetContentEncoding(),
		ContentDisposition: res.GetContentDisposition(),
		ContentLanguage:    res.GetContentLanguage(),
		CacheControl:       res.GetCacheControl(),
		Crc32c:             encodeCRC32C(up.crc),
		Md5Hash:            base64.StdEncoding.EncodeToString(md5sum),
		Created:            now,
		Updated:            now,
		Generation:         s.nextGeneration(now),
		Metadata:           maps.Clone(res.GetMetadata()),
	}
	if attrs.StorageClass == "" {
		attrs.StorageClass = "STANDARD"
	}
	attrs.Etag = attrs.Md5Hash
	if ct := res.GetCustomTime(); ct != nil {
		attrs.CustomTime = ct.AsTime()
	}

	be := s.fs.Backend()
	obj := zeroResult(be.GetObject)
	obj.BucketName = attrs.BucketName
	obj.Name = attrs.Name
	obj.Size = attrs.Size
	obj.StorageClass = attrs.StorageClass
	obj.ContentType = attrs.ContentType
	obj.ContentEncoding = attrs.ContentEncoding
	obj.ContentDisposition = attrs.ContentDisposition
	obj.ContentLanguage = attrs.ContentLanguage
	obj.CacheControl = attrs.CacheControl
	obj.Crc32c = attrs.Crc32c
	obj.Md5Hash = attrs.Md5Hash
	obj.Etag = attrs.Etag
	obj.Metadata = attrs.Metadata
	obj.Created = now.Format(timestampFormat)
	obj.Updated = obj.Created
	if !attrs.CustomTime.IsZero() {
		obj.CustomTime = attrs.CustomTime.Format(timestampFormat)
	}
	obj.Generation = attrs.Generation
	obj.Content = newChunkReader(up.chunks, up.size)

	cond := &preconditions{
		genMatch:     up.spec.IfGenerationMatch,
		genNotMatch:  up.spec.IfGenerationNotMatch,
		metaMatch:    up.spec.IfMetagenerationMatch,
		metaNotMatch: up.spec.IfMetagenerationNotMatch,
	}
	stored, err := be.CreateObject(obj, cond)
	if err != nil {
		if cond.err != nil {
			return nil, cond.err
		}
		return nil, status.Errorf(codes.Internal, "storing object: %v", err)
	}
	stored.Close()
	return toObject(&attrs), nil
}

// nextGeneration returns a new generation number: the time in microseconds,
// as GCS and fake-gcs-server use, made strictly increasing.
func (s *Server) nextGeneration(now time.Time) int64 {
	g := now.UnixMicro()
	for {
		last := s.lastGen.Load()
		if g <= last {
			g = last + 1
		}
		if s.lastGen.CompareAndSwap(last, g) {
			return g
		}
	}
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
			return stream.SendAndClose(writeResponse(obj, size))
		}
		if err != nil {
			return err
		}
		m := writeMsgOf(req)
		obj, _, err = w.handle(&m)
		if err != nil {
			return err
		}
		if obj != nil {
			return stream.SendAndClose(writeResponse(obj, 0))
		}
	}
}

func writeResponse(obj *wire.Object, size int64) *wire.WriteObjectResponse {
	if obj != nil {
		return &wire.WriteObjectResponse{WriteStatus: &wire.WriteObjectResponse_Resource{Resource: obj}}
	}
	return &wire.WriteObjectResponse{WriteStatus: &wire.WriteObjectResponse_PersistedSize{PersistedSize: size}}
}

func bidiResponse(obj *wire.Object, size int64) *wire.BidiWriteObjectResponse {
	if obj != nil {
		return &wire.BidiWriteObjectResponse{WriteStatus: &wire.BidiWriteObjectResponse_Resource{Resource: obj}}
	}
	return &wire.BidiWriteObjectResponse{WriteStatus: &wire.BidiWriteObjectResponse_PersistedSize{PersistedSize: size}}
}

// BidiWriteObject implements the bidirectional write.
func (v *service) BidiWriteObject(stream grpc.BidiStreamingServer[wire.BidiWriteObjectRequest, wire.BidiWriteObjectResponse]) error {
	w := v.s.newWriteStream(stream.Context(), MethodBidiWriteObject)
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			obj, size, err := w.end()
			if err != nil {
				return err
			}
			return stream.Send(bidiResponse(obj, size))
		}
		if err != nil {
			return err
		}
		m := bidiMsgOf(req)
		obj, size, err := w.handle(&m)
		if err != nil {
			return err
		}
		if obj != nil {
			return stream.Send(bidiResponse(obj, 0))
		}
		if m.lookup {
			if err := stream.Send(bidiResponse(nil, size)); err != nil {
				return err
			}
		}
	}
}

// StartResumableWrite opens a resumable session.
func (v *service) StartResumableWrite(ctx context.Context, req *wire.StartResumableWriteRequest) (*wire.StartResumableWriteResponse, error) {
	s := v.s
	up, err := s.newUpload(ctx, req.GetWriteObjectSpec(), req.GetCommonObjectRequestParams())
	if err != nil {
		return nil, err
	}
	if req.ObjectChecksums != nil {
		up.sums = mergeSums(nil, req.ObjectChecksums)
	}
	up.id = rand.Text()
	s.mu.Lock()
	s.uploads[up.id] = up
	s.mu.Unlock()
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
	if up.gone {
		return nil, status.Errorf(codes.NotFound, "upload %q not found", up.id)
	}
	if up.result != nil {
		return &wire.QueryWriteStatusResponse{WriteStatus: &wire.QueryWriteStatusResponse_Resource{Resource: up.result}}, nil
	}
	return &wire.QueryWriteStatusResponse{WriteStatus: &wire.QueryWriteStatusResponse_PersistedSize{PersistedSize: up.size}}, nil
}
