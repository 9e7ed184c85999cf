package fakes

import (
	"net/http"

	"github.com/objup/objup/fakes/internal/store"
)

// statsPath is where the JSON API server reports [Server.Usage] and
// [Server.CallCounts] as JSON.
const statsPath = "/_objup/stats"

// statsBody is the JSON document served at statsPath.
type statsBody struct {
	Tenants  []tenantStats `json:"tenants"`
	Calls    []callStats   `json:"calls"`
	Sessions SessionStats  `json:"sessions"`
}

type tenantStats struct {
	Tenant  string `json:"tenant"`
	Objects int64  `json:"objects"`
	Bytes   int64  `json:"bytes"`
}

type callStats struct {
	Method string `json:"method"`
	Tenant string `json:"tenant"`
	Code   string `json:"code"`
	Count  int64  `json:"count"`
}

// serveStats answers GET /_objup/stats with the objects and bytes stored per
// tenant, the call counters and the resumable sessions kept and expired. It is not itself logged.
func (s *Server) serveStats(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeError(w, &httpRoute{}, store.Errorf(store.KindUnimplemented, "fakes: %s %s is not implemented; use GET", r.Method, statsPath))
		return
	}
	body := statsBody{Tenants: []tenantStats{}, Calls: []callStats{}, Sessions: s.Sessions()}
	for _, u := range s.Usage() {
		body.Tenants = append(body.Tenants, tenantStats{Tenant: u.Tenant, Objects: u.Objects, Bytes: u.Bytes})
	}
	for _, c := range s.CallCounts() {
		body.Calls = append(body.Calls, callStats{Method: c.Method, Tenant: c.Tenant, Code: c.Code.String(), Count: c.Count})
	}
	writeJSON(w, http.StatusOK, &body)
}
