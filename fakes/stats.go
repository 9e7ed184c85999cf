package fakes

import (
	"net/http"

	"github.com/objup/objup/fakes/capacity"
	"github.com/objup/objup/fakes/internal/httpfront"
	"github.com/objup/objup/fakes/internal/store"
)

// statsPath is where the JSON API server reports [Server.Usage],
// [Server.CallCounts], [Server.Sessions] and [Server.CapacityStats] as
// JSON.
const statsPath = "/_objup/stats"

// statsBody is the JSON document served at statsPath.
type statsBody struct {
	Tenants  []tenantStats `json:"tenants"`
	Calls    []callStats   `json:"calls"`
	Sessions SessionStats  `json:"sessions"`
	// Capacity is absent for a server without a capacity.
	Capacity []capacityStats `json:"capacity,omitempty"`
}

// capacityStats are one bucket's capacity counts (capacity.BucketStats).
type capacityStats struct {
	Bucket  string           `json:"bucket"`
	Rate    float64          `json:"rate"`
	Burst   float64          `json:"burst"`
	Tenants []capacityTenant `json:"tenants"`
	capacityCounts
}

type capacityTenant struct {
	Tenant string `json:"tenant"`
	capacityCounts
}

type capacityCounts struct {
	Admitted          int64 `json:"admitted"`
	RateLimited       int64 `json:"rateLimited"`
	Unavailable       int64 `json:"unavailable"`
	ObjectRateLimited int64 `json:"objectRateLimited"`
}

func countsOf(c capacity.Counts) capacityCounts {
	return capacityCounts{Admitted: c.Admitted, RateLimited: c.RateLimited, Unavailable: c.Unavailable, ObjectRateLimited: c.ObjectRateLimited}
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
// tenant, the call counters, the resumable sessions kept and expired, and
// the counts of the buckets' write capacity, if any. It is not itself
// logged.
func (s *Server) serveStats(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		httpfront.WriteError(w, &httpfront.HTTPRoute{}, store.Errorf(store.KindUnimplemented, "fakes: %s %s is not implemented; use GET", r.Method, statsPath))
		return
	}
	body := statsBody{Tenants: []tenantStats{}, Calls: []callStats{}, Sessions: s.Sessions()}
	for _, u := range s.Usage() {
		body.Tenants = append(body.Tenants, tenantStats(u))
	}
	for _, c := range s.CallCounts() {
		body.Calls = append(body.Calls, callStats{Method: c.Method, Tenant: c.Tenant, Code: c.Code.String(), Count: c.Count})
	}
	for _, b := range s.CapacityStats() {
		cs := capacityStats{Bucket: b.Bucket, Rate: b.Rate, Burst: b.Burst, capacityCounts: countsOf(b.Counts),
			Tenants: make([]capacityTenant, 0, len(b.Tenants))}
		for _, t := range b.Tenants {
			cs.Tenants = append(cs.Tenants, capacityTenant{Tenant: t.Tenant, capacityCounts: countsOf(t.Counts)})
		}
		body.Capacity = append(body.Capacity, cs)
	}
	httpfront.WriteJSON(w, http.StatusOK, &body)
}

// serveHTTP is the HTTP port's handler: the stats document, else the HTTP
// front (the JSON and XML APIs).
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.EscapedPath() == statsPath {
		s.serveStats(w, r)
		return
	}
	s.httpFront.ServeHTTP(w, r)
}
