package fakes

import (
	"context"
	"net/http"
	"slices"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/retrytest"
	"github.com/objup/objup/fakes/internal/writes"
)

// The fake's side of the retry test API (package retrytest): which
// retry test method a JSON API route or a gRPC method consumes the
// instructions of, and the Host the API calls back.

// newRetryTests returns the server's retry test registry.
func newRetryTests(s *Server) *retrytest.Tests {
	var grpcNames []string
	for _, r := range RPCs {
		if r.Retry != "" && !slices.Contains(grpcNames, r.Retry) {
			grpcNames = append(grpcNames, r.Retry)
		}
	}
	return retrytest.New(retryHost{s}, grpcNames)
}

// retryHost is the Server as the retry test API sees it.
type retryHost struct{ s *Server }

func (h retryHost) WriteError(w http.ResponseWriter, err error) { WriteError(w, &HTTPRoute{}, err) }

func (h retryHost) WriteJSON(w http.ResponseWriter, st int, v any) { WriteJSON(w, st, v) }

func (h retryHost) Stopping() <-chan struct{} { return h.s.Faults.Stop }

func (h retryHost) Redirect(msg, token string, handle []byte, gen int64) error {
	return writes.Redirect(msg, token, handle, gen)
}

func (h retryHost) HasRoutingToken(ctx context.Context, token string) bool {
	return writes.HasRoutingToken(ctx, token)
}

func (h retryHost) Chunk(r *http.Request, uploadID string) (retrytest.Chunk, bool) {
	cr, err := ParseContentRange(r.Header.Get("Content-Range"), r.ContentLength)
	if err != nil || cr.First < 0 {
		return retrytest.Chunk{}, false
	}
	up, err := h.s.JSONSession(uploadID)
	if err != nil {
		return retrytest.Chunk{}, false
	}
	up.Mu.Lock()
	persisted, done := up.Size, up.Stored != nil || up.Gone
	up.Mu.Unlock()
	return retrytest.Chunk{First: cr.First, Last: cr.Last, Open: cr.Open, Persisted: persisted, Done: done}, true
}

// NoteTarget records the bucket and object that a stream's first message
// names, for the request log of a stream that fails on it.
func (h retryHost) NoteTarget(ctx context.Context, m any) {
	switch r := m.(type) {
	case *emptypb.Empty: // BidiReadObject
		if spec, _, err := ParseBidiRead(r.ProtoReflect().GetUnknown()); err == nil && spec != nil {
			if b, err := api.ParseBucket(spec.Bucket); err == nil {
				NoteTarget(ctx, b, spec.Object)
			}
		}
	case interface{ GetUploadId() string }:
		if id := r.GetUploadId(); id != "" {
			h.s.Session(ctx, id) // notes the session's object
			return
		}
		if b, o := TargetOf(m); b != "" {
			NoteTarget(ctx, b, o)
		}
	default:
		if b, o := TargetOf(m); b != "" {
			NoteTarget(ctx, b, o)
		}
	}
}
