package fakes

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/retrytest"
	"github.com/objup/objup/fakes/internal/writes"
)

// The fake's side of the retry test API (package retrytest): which
// retry test method a JSON API route or a gRPC method consumes the
// instructions of, and the Host the API calls back.

// retryResources are the JSON API resources whose retry test method names
// are not "storage." and the method's: the testbench's names for them.
var retryResources = map[string]string{
	"bucketAccessControls.":        "storage.bucket_acl.",
	"defaultObjectAccessControls.": "storage.default_object_acl.",
	"objectAccessControls.":        "storage.object_acl.",
	"projects.hmacKeys.":           "storage.hmacKey.",
	"projects.serviceAccount.":     "storage.serviceaccount.",
}

// retryName is the retry test method name of a JSON API method, such as
// "objects.get" (storage.objects.get) or "bucketAccessControls.list"
// (storage.bucket_acl.list).
func retryName(method string) string {
	for res, name := range retryResources {
		if verb, ok := strings.CutPrefix(method, res); ok {
			return name + verb
		}
	}
	return "storage." + method
}

// retryMethodOf returns the retry test method name of a request to a JSON
// API route ("objects.get" is "storage.objects.get"; the cancel of a
// resumable session, DELETE on its URI, is "storage.objects.delete", as
// in the testbench) or an XML API route (xmlMethods). The registry
// ignores a name it does not serve over HTTP.
func retryMethodOf(r *http.Request, route string) string {
	if x, ok := xmlMethods[route]; ok {
		return x.retry
	}
	name := retryName(route)
	if name == "storage.objects.insert" && r.Method == http.MethodDelete {
		name = "storage.objects.delete"
	}
	return name
}

// newRetryTests returns the server's retry test registry.
func newRetryTests(s *Server) *retrytest.Tests {
	var grpcNames []string
	for _, r := range rpcs {
		if r.retry != "" && !slices.Contains(grpcNames, r.retry) {
			grpcNames = append(grpcNames, r.retry)
		}
	}
	return retrytest.New(retryHost{s}, grpcNames)
}

// retryHTTP applies the retry test a JSON API request names to its route.
func (s *Server) retryHTTP(r *http.Request, rt *httpRoute) {
	if !s.retry.Active() {
		return
	}
	rt.serve = s.retry.HTTP(r, retryMethodOf(r, rt.method), rt.serve)
}

// retryGRPC applies the retry test a gRPC call names (retrytest.Tests.GRPC)
// to the instructions of its method's retry test method (rpc.retry).
func (s *Server) retryGRPC(ctx context.Context, method string, stream bool) (*retrytest.Call, error) {
	if !s.retry.Active() {
		return nil, nil
	}
	var name string
	if r := rpcNamed[method]; r != nil {
		name = r.retry
	}
	return s.retry.GRPC(ctx, name, method == MethodBidiWriteObject, stream)
}

// retryHost is the Server as the retry test API sees it.
type retryHost struct{ s *Server }

func (h retryHost) WriteError(w http.ResponseWriter, err error) { writeError(w, &httpRoute{}, err) }

func (h retryHost) WriteJSON(w http.ResponseWriter, st int, v any) { writeJSON(w, st, v) }

func (h retryHost) Stopping() <-chan struct{} { return h.s.faults.stop }

func (h retryHost) Redirect(msg, token string, handle []byte, gen int64) error {
	return writes.Redirect(msg, token, handle, gen)
}

func (h retryHost) HasRoutingToken(ctx context.Context, token string) bool {
	return writes.HasRoutingToken(ctx, token)
}

func (h retryHost) Chunk(r *http.Request, uploadID string) (retrytest.Chunk, bool) {
	cr, err := parseContentRange(r.Header.Get("Content-Range"), r.ContentLength)
	if err != nil || cr.first < 0 {
		return retrytest.Chunk{}, false
	}
	up, err := h.s.jsonSession(uploadID)
	if err != nil {
		return retrytest.Chunk{}, false
	}
	up.mu.Lock()
	persisted, done := up.Size, up.stored != nil || up.gone
	up.mu.Unlock()
	return retrytest.Chunk{First: cr.first, Last: cr.last, Open: cr.open, Persisted: persisted, Done: done}, true
}

// NoteTarget records the bucket and object that a stream's first message
// names, for the request log of a stream that fails on it.
func (h retryHost) NoteTarget(ctx context.Context, m any) {
	switch r := m.(type) {
	case *emptypb.Empty: // BidiReadObject
		if spec, _, err := parseBidiRead(r.ProtoReflect().GetUnknown()); err == nil && spec != nil {
			if b, err := api.ParseBucket(spec.bucket); err == nil {
				noteTarget(ctx, b, spec.object)
			}
		}
	case interface{ GetUploadId() string }:
		if id := r.GetUploadId(); id != "" {
			h.s.session(ctx, id) // notes the session's object
			return
		}
		if b, o := targetOf(m); b != "" {
			noteTarget(ctx, b, o)
		}
	default:
		if b, o := targetOf(m); b != "" {
			noteTarget(ctx, b, o)
		}
	}
}
