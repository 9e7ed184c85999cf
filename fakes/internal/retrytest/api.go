package retrytest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/objup/objup/fakes/internal/store"
)

// The retry test API's own requests: a test is created from its POST
// body, read, listed and removed.

// IsPath reports whether an escaped path belongs to the retry test API.
func IsPath(path string) bool {
	return path == retryTestPath || path == retryTestsPath || strings.HasPrefix(path, retryTestPath+"/")
}

// ServeAPI serves the retry test API at path (IsPath): POST /retry_test
// creates a test, GET and DELETE /retry_test/ID read and remove one, GET
// /retry_tests lists them.
func (s *Tests) ServeAPI(w http.ResponseWriter, r *http.Request, path string) {
	fail := func(err error) { s.host.WriteError(w, err) }
	writeJSON := s.host.WriteJSON
	switch {
	case path == retryTestsPath && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"retry_test": s.list()})
	case path == retryTestPath && r.Method == http.MethodPost:
		body, err := io.ReadAll(io.LimitReader(r.Body, maxRetryTestBody))
		if err != nil {
			fail(store.Errorf(store.KindInvalid, "fakes: reading the retry test: %v", err))
			return
		}
		t, err := s.newRetryTest(body)
		if err != nil {
			fail(err)
			return
		}
		writeJSON(w, http.StatusOK, s.add(t))
	case strings.HasPrefix(path, retryTestPath+"/"):
		id := strings.TrimPrefix(path, retryTestPath+"/")
		switch r.Method {
		case http.MethodGet:
			if t := s.get(id); t != nil {
				writeJSON(w, http.StatusOK, t)
				return
			}
		case http.MethodDelete:
			if s.remove(id) {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				fmt.Fprintf(w, "Deleted %s", id)
				return
			}
		default:
			fail(store.Errorf(store.KindUnimplemented, "fakes: %s %s is not implemented; use GET or DELETE", r.Method, path))
			return
		}
		fail(store.Errorf(store.KindNotFound, "fakes: retry test %q not found", id))
	default:
		fail(store.Errorf(store.KindUnimplemented, "fakes: %s %s is not implemented; use POST %s, GET or DELETE %s/ID, or GET %s", r.Method, path, retryTestPath, retryTestPath, retryTestsPath))
	}
}

// newRetryTest validates a POST /retry_test body and returns its test.
func (r *Tests) newRetryTest(body []byte) (*retryTest, error) {
	var in struct {
		Instructions map[string][]string `json:"instructions"`
		Transport    string              `json:"transport"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, store.Errorf(store.KindInvalid, "fakes: the retry test is not a JSON object: %v", err)
	}
	if len(in.Instructions) == 0 {
		return nil, store.Errorf(store.KindInvalid, "fakes: instructions is not defined")
	}
	tr := strings.ToUpper(in.Transport)
	switch tr {
	case "":
		tr = transportHTTP
	case transportHTTP, transportGRPC:
	default:
		return nil, store.Errorf(store.KindInvalid, "fakes: the requested transport %q is not HTTP or GRPC", in.Transport)
	}
	t := &retryTest{transport: tr, raw: make(map[string][]string), pending: make(map[string][]instruction)}
	for _, name := range slices.Sorted(maps.Keys(in.Instructions)) {
		list := in.Instructions[name]
		if err := r.checkRetryMethod(name, tr); err != nil {
			return nil, err
		}
		for _, s := range list {
			ins, err := parseInstruction(s)
			if err == nil {
				err = r.checkInstruction(name, tr, s, ins)
			}
			if err != nil {
				return nil, err
			}
			ins.seq = len(t.pending[name])
			t.pending[name] = append(t.pending[name], ins)
		}
		t.raw[name] = slices.Clone(list)
	}
	t.completed = func() bool {
		for _, p := range t.pending {
			if len(p) > 0 {
				return false
			}
		}
		return true
	}()
	t.id = newRetryTestID()
	return t, nil
}

func newRetryTestID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
