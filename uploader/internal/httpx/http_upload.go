package httpx

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/objup/objup/uploader/internal/xfer"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/internal/wire"
)

// WriteObject sends rs as one multipart upload: the object resource (with
// the checksums, so the service verifies them) and the media, streamed from
// the chunks. Preconditions go in the query.
func (t *httpTransport) WriteObject(u *xfer.Request, rs []*xfer.ChunkRef, timeout time.Duration) (*wire.Object, bool, error) {
	spec := u.Spec()
	meta := metadataJSON(spec, u.Checksums())
	prefix, suffix := t.multipartBody(meta, spec.GetResource().GetContentType())
	body := bodyOver(u, prefix, rs, rs[0].Offset, suffix)
	resp, cancel, err := t.do(u.AttemptCtx(), u, timeout, http.MethodPost, t.uploadURL(u.Bucket, query(u, "multipart")),
		body, body.size(), http.Header{"Content-Type": {"multipart/related; boundary=" + t.boundary}})
	if err != nil {
		return nil, true, err
	}
	defer cancel()
	o, err := objectOf(resp)
	return o, true, err
}

// objectOf reads the object a finished upload answered with, or the
// response's error; it closes the response.
func objectOf(resp *http.Response) (*wire.Object, error) {
	defer closeResponse(resp)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		return nil, statusError(resp)
	}
	return readObject(resp.Body)
}

// StartUpload starts a resumable upload: the object resource goes first,
// and the session URI comes back in Location.
func (t *httpTransport) StartUpload(u *xfer.Request, timeout time.Duration) (string, error) {
	spec := u.Spec()
	meta := metadataJSON(spec, nil)
	body := bodyOver(u, meta, nil, 0, nil)
	hdr := http.Header{"Content-Type": {"application/json; charset=UTF-8"}, "X-Upload-Content-Type": {spec.GetResource().GetContentType()}}
	resp, cancel, err := t.do(u.Ctx, u, timeout, http.MethodPost, t.uploadURL(u.Bucket, query(u, "resumable")), body, body.size(), hdr)
	if err != nil {
		return "", err
	}
	defer cancel()
	defer closeResponse(resp)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		return "", statusError(resp)
	}
	loc := resp.Header.Get("Location")
	if loc == "" {
		return "", status.Error(codes.Internal, errNoLocation.Error())
	}
	return loc, nil
}

// QueryStatus asks the session how much it persisted (Content-Range:
// bytes */size, or */* while the size is unknown).
func (t *httpTransport) QueryStatus(u *xfer.Request, uri string, _ xfer.Route, size int64, timeout time.Duration) (int64, *wire.Object, error) {
	total := "*"
	if size >= 0 {
		total = strconv.FormatInt(size, 10)
	}
	resp, cancel, err := t.do(u.Ctx, u, timeout, http.MethodPut, uri, nil, 0, http.Header{"Content-Range": {"bytes */" + total}})
	if err != nil {
		return 0, nil, err
	}
	defer cancel()
	return readAnswer(resp)
}

// CancelUpload cancels the session with a DELETE, so the service drops
// what it received; it goes out even when the upload's context ended.
func (t *httpTransport) CancelUpload(u *xfer.Request, uri string, timeout time.Duration) error {
	resp, cancel, err := t.do(context.WithoutCancel(u.Ctx), u, timeout, http.MethodDelete, uri, nil, 0, nil)
	if err != nil {
		return err
	}
	defer cancel()
	defer closeResponse(resp)
	if resp.StatusCode == 499 || resp.StatusCode == http.StatusNoContent {
		// Cancelled: GCS answers 499.
		return nil
	}
	return statusError(resp)
}

// Window: one PUT carries a Window of chunks while the Writer fills the
// next, so a session has up to two windows pushed and not persisted.
func (t *httpTransport) Window(perSend int64) int64 { return 2 * perSend }

// httpStream sends a resumable session's data in PUTs of a window's worth
// of chunks (half the session's window), each answered by the persisted
// size (a 308 with Range) or, for the last, the object. The JSON API takes
// one request of a session at a time, so one PUT runs on a goroutine of its
// own while the Writer fills the next window. Chunks go back once
// persisted and once net/http closed the request body that read them.
type httpStream struct {
	sink xfer.StreamSink
	u    *xfer.Request
	t    *httpTransport
	uri  string
	// ctx is the PUTs' context, cancelled when one fails (which ends the
	// stream: see broken) or at teardown.
	ctx    context.Context
	cancel context.CancelFunc

	busy     atomic.Bool    // a PUT is in flight
	put      sync.WaitGroup // the PUT in flight, until it has reported
	acked    atomic.Int64   // persisted, as the last answer said
	finished atomic.Bool    // the last answer was the object

	// Owned by the Writer's goroutine.
	want xfer.Pushed // what the last send was asked to send
}

// From is where the stream's next PUT starts: what the service persisted,
// as its last answer said.
func (h *httpStream) From() int64 { return h.acked.Load() }

func (t *httpTransport) OpenStream(u *xfer.Request, uri string, _ xfer.Route, persisted int64, sink xfer.StreamSink, _ time.Duration) (xfer.Stream, error) {
	h := &httpStream{sink: sink, u: u, t: t, uri: uri}
	h.acked.Store(persisted)
	h.ctx, h.cancel = context.WithCancel(u.Ctx)
	return h, nil
}

func (h *httpStream) Route() xfer.Route { return xfer.NoRoute }

func (h *httpStream) Idle() bool { return !h.busy.Load() }

func (h *httpStream) Behind() bool {
	return h.want.Last > h.acked.Load() || (h.want.Final && !h.finished.Load())
}

func (h *httpStream) Broken() context.Context { return h.ctx }

// Send starts a PUT of everything from the persisted offset, on its own
// goroutine, unless one is in flight: when a window is ready, or with all
// set whatever there is (the last, with the total and the checksums, once
// the session is final).
func (h *httpStream) Send(p xfer.Pushed, rs []*xfer.ChunkRef, all bool) error {
	h.want = p
	if h.busy.Load() {
		return nil
	}
	persisted := p.Persisted
	if p.Last-persisted < p.Window/2 && !all || !h.Behind() {
		return nil
	}
	final := all && p.Final
	body := bodyOver(h.u, nil, rs, persisted, nil)
	n := body.size()
	total := "*"
	if final {
		total = strconv.FormatInt(p.Last, 10)
	}
	hdr := http.Header{}
	switch {
	case n == 0:
		hdr.Set("Content-Range", "bytes */"+total)
	default:
		hdr.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%s", persisted, persisted+n-1, total))
	}
	if final && h.u.Checksums() != nil {
		if v := hashHeader(h.u.Checksums()); v != "" {
			hdr.Set("X-Goog-Hash", v)
		}
	}
	h.busy.Store(true)
	h.put.Add(1)
	go h.run(p.Timeout, body, n, hdr, final, p.Last)
	return nil
}

// run makes one PUT and reports its answer to the session.
func (h *httpStream) run(timeout time.Duration, body *httpBody, n int64, hdr http.Header, final bool, last int64) {
	defer h.put.Done()
	resp, cancel, err := h.t.do(h.ctx, h.u, timeout, http.MethodPut, h.uri, body, n, hdr)
	var persisted int64
	var o *wire.Object
	if err == nil {
		persisted, o, err = readAnswer(resp)
		cancel()
	}
	if err == nil && final && o == nil && persisted == last {
		err = status.Error(codes.Internal, "the service did not finish the upload")
	}
	if err == nil {
		h.acked.Store(persisted)
		if o != nil {
			h.finished.Store(true)
		}
		err = h.sink.Ack(persisted, o, nil)
	}
	h.busy.Store(false)
	if err != nil {
		h.cancel()
		h.sink.Broke(err)
		return
	}
	// Idle now: the session may have more to send.
	h.sink.Signal()
}

// Teardown cancels the PUT in flight, if any, and waits for its report.
func (h *httpStream) Teardown(cause error) error {
	h.cancel()
	h.put.Wait()
	return cause
}

// Done: the last PUT's answer was the finished object.
func (h *httpStream) Done(context.Context) {}

// readAnswer reads a session's answer: 308 with the persisted range, or the
// finished object. It closes the response.
func readAnswer(resp *http.Response) (persisted int64, o *wire.Object, err error) {
	switch resp.StatusCode {
	case http.StatusPermanentRedirect:
		defer closeResponse(resp)
		if rg := resp.Header.Get("Range"); rg != "" {
			end, ok := parseRangeEnd(rg)
			if !ok {
				return 0, nil, status.Errorf(codes.Internal, "the service answered Range %q", rg)
			}
			persisted = end + 1
		}
		return persisted, nil, nil
	case http.StatusOK, http.StatusCreated:
		o, err := objectOf(resp)
		if err != nil {
			return 0, nil, err
		}
		return o.GetSize(), o, nil
	}
	defer closeResponse(resp)
	return 0, nil, statusError(resp)
}

// parseRangeEnd reads the last byte of "bytes=0-N".
func parseRangeEnd(rg string) (int64, bool) {
	v, ok := strings.CutPrefix(rg, "bytes=0-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil && n >= 0
}

// ComposeObject makes one attempt of objects.compose into u's object: the
// destination's resource and the sources in the body, its preconditions in
// the query.
func (t *httpTransport) ComposeObject(u *xfer.Request, srcs []xfer.Source, timeout time.Duration) (*wire.Object, error) {
	type src struct {
		Name       string `json:"name"`
		Generation int64  `json:"generation,omitempty,string"`
	}
	req := struct {
		Destination   json.RawMessage `json:"destination"`
		SourceObjects []src           `json:"sourceObjects"`
	}{Destination: metadataJSON(u.Spec(), nil), SourceObjects: make([]src, len(srcs))}
	for i, s := range srcs {
		req.SourceObjects[i] = src{Name: s.Name, Generation: s.Gen}
	}
	b, err := json.Marshal(&req)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	q := query(u, "")
	q.Del("uploadType")
	if acl := q.Get("predefinedAcl"); acl != "" {
		q.Del("predefinedAcl")
		q.Set("destinationPredefinedAcl", acl)
	}
	uri := t.objectURL(u.Bucket, u.Object) + "/compose?" + q.Encode()
	body := bodyOver(u, b, nil, 0, nil)
	resp, cancel, err := t.do(u.Ctx, u, timeout, http.MethodPost, uri, body, body.size(), http.Header{"Content-Type": {"application/json; charset=UTF-8"}})
	if err != nil {
		return nil, err
	}
	defer cancel()
	return objectOf(resp)
}

// GetObject makes one attempt of objects.get.
func (t *httpTransport) GetObject(u *xfer.Request, name string, timeout time.Duration) (*wire.Object, error) {
	resp, cancel, err := t.do(u.Ctx, u, timeout, http.MethodGet, t.objectURL(u.Bucket, name), nil, 0, nil)
	if err != nil {
		return nil, err
	}
	defer cancel()
	return objectOf(resp)
}

// DeleteObject makes one attempt of objects.delete.
func (t *httpTransport) DeleteObject(u *xfer.Request, name string, gen int64, timeout time.Duration) error {
	uri := t.objectURL(u.Bucket, name)
	if gen != 0 {
		uri += "?generation=" + strconv.FormatInt(gen, 10)
	}
	resp, cancel, err := t.do(u.Ctx, u, timeout, http.MethodDelete, uri, nil, 0, nil)
	if err != nil {
		return err
	}
	defer cancel()
	defer closeResponse(resp)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNoContent {
		return statusError(resp)
	}
	return nil
}

// errNoAppendable is the failure of an appendable object's stream over the
// JSON API, which has none (the Writer refuses WithAppendable over HTTP).
var errNoAppendable = status.Error(codes.Unimplemented, "appendable objects are written over gRPC only, not the JSON API")

// OpenAppend fails: the JSON API has no appendable objects.
func (t *httpTransport) OpenAppend(*xfer.Request, xfer.AppendOpen, time.Duration) (xfer.AppendStream, xfer.AppendOpened, error) {
	return nil, xfer.AppendOpened{}, errNoAppendable
}
