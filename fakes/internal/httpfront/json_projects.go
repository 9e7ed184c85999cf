package httpfront

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/objup/objup/fakes/internal/core"
	"github.com/objup/objup/fakes/internal/store"
)

// The project methods: projects.hmacKeys (create, list, get, update,
// delete) and projects.serviceAccount.get. The fake has one project, which
// answers to any project ID: its HMAC keys are stored and returned (a key
// signs nothing), its service account is that of project number 0.

// serviceAccountEmail is the email of the fake project's service account,
// in GCS's form.
const serviceAccountEmail = "service-" + store.ProjectNumber + "@gs-project-accounts.iam.gserviceaccount.com"

// hmacKeyResource is the JSON API's HMAC key metadata resource.
type hmacKeyResource struct {
	Kind                string `json:"kind"`
	ID                  string `json:"id"`
	SelfLink            string `json:"selfLink"`
	AccessID            string `json:"accessId"`
	ProjectID           string `json:"projectId"`
	ServiceAccountEmail string `json:"serviceAccountEmail"`
	State               string `json:"state"`
	TimeCreated         string `json:"timeCreated"`
	Updated             string `json:"updated"`
	Etag                string `json:"etag"`
}

func hmacKeyJSON(k *store.HMACKey, base string) *hmacKeyResource {
	return &hmacKeyResource{
		Kind: "storage#hmacKey", ID: k.ProjectID + "/" + k.AccessID,
		SelfLink: base + "/storage/v1/projects/" + url.PathEscape(k.ProjectID) + "/hmacKeys/" + url.PathEscape(k.AccessID),
		AccessID: k.AccessID, ProjectID: k.ProjectID, ServiceAccountEmail: k.ServiceAccount, State: k.State,
		TimeCreated: core.FormatTime(k.Created), Updated: core.FormatTime(k.Updated), Etag: k.Etag,
	}
}

// routeProjects routes a request under "/storage/v1/projects/"; path
// follows it.
func (s *Server) routeProjects(r *http.Request, path string) *HTTPRoute {
	m := r.Method
	project, rest, ok := segment(path)
	what, id, hasID := strings.Cut(rest, "/")
	switch {
	case !ok || project == "":
	case what == "serviceAccount" && !hasID && m == http.MethodGet:
		return to("projects.serviceAccount.get", "", "", s.getServiceAccount)
	case what != "hmacKeys":
	case !hasID && m == http.MethodPost:
		return to("projects.hmacKeys.create", "", "", func(w http.ResponseWriter, r *http.Request) error { return s.createHMACKey(w, r, project) })
	case !hasID && m == http.MethodGet:
		return to("projects.hmacKeys.list", "", "", s.listHMACKeys)
	case !hasID:
	default:
		id, err := url.PathUnescape(id)
		if err != nil || id == "" {
			break
		}
		switch m {
		case http.MethodGet:
			return to("projects.hmacKeys.get", "", "", func(w http.ResponseWriter, r *http.Request) error { return s.getHMACKey(w, r, id) })
		case http.MethodPut:
			return to("projects.hmacKeys.update", "", "", func(w http.ResponseWriter, r *http.Request) error { return s.updateHMACKey(w, r, id) })
		case http.MethodDelete:
			return to("projects.hmacKeys.delete", "", "", func(w http.ResponseWriter, r *http.Request) error { return s.deleteHMACKey(w, id) })
		}
	}
	return unimplemented(m+" projects", m+" "+r.URL.Path)
}

// getServiceAccount serves projects.serviceAccount.get.
func (s *Server) getServiceAccount(w http.ResponseWriter, _ *http.Request) error {
	WriteJSON(w, http.StatusOK, map[string]string{"kind": "storage#serviceAccount", "email_address": serviceAccountEmail})
	return nil
}

// createHMACKey serves projects.hmacKeys.create: an active key for the
// service account serviceAccountEmail, with its secret, which no other
// method gives out.
func (s *Server) createHMACKey(w http.ResponseWriter, r *http.Request, project string) error {
	k, err := s.Store.CreateHMACKey(project, r.URL.Query().Get("serviceAccountEmail"))
	if err != nil {
		return err
	}
	WriteJSON(w, http.StatusOK, map[string]any{"kind": "storage#hmacKey", "metadata": hmacKeyJSON(k, baseURL(r)), "secret": k.Secret})
	return nil
}

// listHMACKeys serves projects.hmacKeys.list, of one service account
// (serviceAccountEmail) or all, in pages (maxResults, pageToken). Deleted
// keys are forgotten: showDeletedKeys lists no more.
func (s *Server) listHMACKeys(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	size, err := queryInt(q, "maxResults")
	switch {
	case err != nil:
		return err
	case size < 0:
		return store.Errorf(store.KindInvalid, "maxResults is %d", size)
	case size == 0 || size > core.MaxPageSize:
		size = core.MaxPageSize
	}
	if _, err := queryBool(q, "showDeletedKeys"); err != nil {
		return err
	}
	after := ""
	if t := q.Get("pageToken"); t != "" {
		name, _, ok := store.ParsePageToken(t)
		if !ok {
			return store.Errorf(store.KindInvalid, "page token %q is not one this server issued", t)
		}
		after = name
	}
	keys, more := s.Store.HMACKeys(q.Get("serviceAccountEmail"), after, int(size))
	out := struct {
		Kind          string             `json:"kind"`
		NextPageToken string             `json:"nextPageToken,omitempty"`
		Items         []*hmacKeyResource `json:"items"`
	}{Kind: "storage#hmacKeysMetadata", Items: []*hmacKeyResource{}}
	for _, k := range keys {
		out.Items = append(out.Items, hmacKeyJSON(k, baseURL(r)))
	}
	if more {
		out.NextPageToken = store.PageToken(keys[len(keys)-1].AccessID, 0)
	}
	WriteJSON(w, http.StatusOK, out)
	return nil
}

// getHMACKey serves projects.hmacKeys.get.
func (s *Server) getHMACKey(w http.ResponseWriter, r *http.Request, id string) error {
	k, err := s.Store.HMACKey(id)
	if err != nil {
		return err
	}
	WriteJSON(w, http.StatusOK, hmacKeyJSON(k, baseURL(r)))
	return nil
}

// updateHMACKey serves projects.hmacKeys.update: the body's state, ACTIVE
// or INACTIVE, under its etag, if it has one (else 412).
func (s *Server) updateHMACKey(w http.ResponseWriter, r *http.Request, id string) error {
	var in struct{ State, Etag string }
	if err := json.NewDecoder(io.LimitReader(r.Body, maxMetadataBody)).Decode(&in); err != nil && !errors.Is(err, io.EOF) {
		return store.Errorf(store.KindInvalid, "the request body is not a JSON HMAC key resource: %v", err)
	}
	k, err := s.Store.UpdateHMACKey(id, in.State, in.Etag)
	if err != nil {
		return err
	}
	WriteJSON(w, http.StatusOK, hmacKeyJSON(k, baseURL(r)))
	return nil
}

// deleteHMACKey serves projects.hmacKeys.delete: only an inactive key can
// go (400 otherwise).
func (s *Server) deleteHMACKey(w http.ResponseWriter, id string) error {
	if err := s.Store.DeleteHMACKey(id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
