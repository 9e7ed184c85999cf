package httpfront

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/objup/objup/fakes/internal/core"
	"github.com/objup/objup/fakes/internal/store"
)

// The IAM methods of a bucket: buckets.getIamPolicy, setIamPolicy and
// testIamPermissions. The policy is stored and returned, with an etag that
// setIamPolicy checks; it grants and denies nothing.

// policyResource is the JSON API's IAM policy resource.
type policyResource struct {
	Kind       string            `json:"kind"`
	ResourceID string            `json:"resourceId"`
	Version    int64             `json:"version"`
	Etag       string            `json:"etag"`
	Bindings   []bindingResource `json:"bindings"`
}

type bindingResource struct {
	Role      string          `json:"role"`
	Members   []string        `json:"members"`
	Condition json.RawMessage `json:"condition,omitempty"`
}

// policyJSON is bucket b's IAM policy p as the JSON API's resource.
func policyJSON(b *store.Bucket, p *store.Policy) *policyResource {
	out := &policyResource{Kind: "storage#policy", ResourceID: b.ResName(), Version: p.Version, Etag: p.Etag, Bindings: []bindingResource{}}
	for _, x := range p.Bindings {
		br := bindingResource{Role: x.Role, Members: x.Members}
		if x.Condition != "" {
			br.Condition = json.RawMessage(x.Condition)
		}
		out.Bindings = append(out.Bindings, br)
	}
	return out
}

// routeIAM routes a request under "b/BUCKET/iam"; sub is the path after
// it.
func (s *Server) routeIAM(r *http.Request, bkt, sub string, hasSub bool) *HTTPRoute {
	switch {
	case !hasSub && r.Method == http.MethodGet:
		return to("buckets.getIamPolicy", bkt, "", func(w http.ResponseWriter, r *http.Request) error { return s.getIAMPolicy(w, r, bkt) })
	case !hasSub && r.Method == http.MethodPut:
		return to("buckets.setIamPolicy", bkt, "", func(w http.ResponseWriter, r *http.Request) error { return s.setIAMPolicy(w, r, bkt) })
	case sub == "testPermissions" && r.Method == http.MethodGet:
		return to("buckets.testIamPermissions", bkt, "", func(w http.ResponseWriter, r *http.Request) error { return s.testIAMPermissions(w, r, bkt) })
	}
	rt := unimplemented(r.Method+" iam", r.Method+" "+r.URL.Path)
	rt.bucket = bkt
	return rt
}

// getIAMPolicy serves buckets.getIamPolicy.
func (s *Server) getIAMPolicy(w http.ResponseWriter, r *http.Request, bkt string) error {
	if _, err := queryInt(r.URL.Query(), "optionsRequestedPolicyVersion"); err != nil {
		return err
	}
	b, err := s.Store.Bucket(bkt)
	if err != nil {
		return err
	}
	p, err := b.Policy()
	if err != nil {
		return err
	}
	WriteJSON(w, http.StatusOK, policyJSON(b, p))
	return nil
}

// setIAMPolicy serves buckets.setIamPolicy: the body is the new policy;
// an etag in it must be the policy's in place (else 412).
func (s *Server) setIAMPolicy(w http.ResponseWriter, r *http.Request, bkt string) error {
	var in struct {
		Version  int64             `json:"version"`
		Etag     string            `json:"etag"`
		Bindings []bindingResource `json:"bindings"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, maxMetadataBody)).Decode(&in); err != nil && !errors.Is(err, io.EOF) {
		return store.Errorf(store.KindInvalid, "the request body is not a JSON policy: %v", err)
	}
	if in.Version < 0 || in.Version > 3 {
		return store.Errorf(store.KindInvalid, "policy version %d is not 1 to 3", in.Version)
	}
	p := store.Policy{Version: in.Version}
	for _, x := range in.Bindings {
		if x.Role == "" {
			return store.Errorf(store.KindInvalid, "a policy binding needs a role")
		}
		if len(x.Members) == 0 {
			continue // GCS drops bindings without members
		}
		bd := store.Binding{Role: x.Role, Members: x.Members}
		if len(x.Condition) > 0 && !core.IsNull(x.Condition) {
			var c bytes.Buffer
			if err := json.Compact(&c, x.Condition); err != nil {
				return store.Errorf(store.KindInvalid, "binding condition: %v", err)
			}
			bd.Condition = c.String()
		}
		p.Bindings = append(p.Bindings, bd)
	}
	b, err := s.Store.Bucket(bkt)
	if err != nil {
		return err
	}
	out, err := b.SetPolicy(p, in.Etag)
	if err != nil {
		return err
	}
	WriteJSON(w, http.StatusOK, policyJSON(b, out))
	return nil
}

// testIAMPermissions serves buckets.testIamPermissions: the fake grants
// every storage permission asked for (permissions, repeated; none asked,
// none granted), but to a caller held to a role (WithCredential), which
// gets those of the role's (granted).
func (s *Server) testIAMPermissions(w http.ResponseWriter, r *http.Request, bkt string) error {
	perms := r.URL.Query()["permissions"]
	for _, p := range perms {
		if !strings.HasPrefix(p, "storage.") {
			return store.Errorf(store.KindInvalid, "permission %q is not a storage permission", p)
		}
	}
	if _, err := s.Store.Bucket(bkt); err != nil {
		return err
	}
	WriteJSON(w, http.StatusOK, struct {
		Kind        string   `json:"kind"`
		Permissions []string `json:"permissions,omitempty"`
	}{"storage#testIamPermissionsResponse", core.Granted(r.Context(), perms)})
	return nil
}
