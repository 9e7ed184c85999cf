package httpfront

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/internal/httpcode"
)

// httpKindOf returns the HTTP status and JSON reason for err: its own for a
// *store.Error, else those of its gRPC code (httpcode.Status).
func httpKindOf(err error) (int, string) {
	var ae *store.Error
	if errors.As(err, &ae) {
		return ae.HTTP, ae.Reason
	}
	return httpcode.Status(status.Code(err))
}

// jsonError is the GCS JSON API's error body.
type jsonError struct {
	Error jsonErrorBody `json:"error"`
}

type jsonErrorBody struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Errors  []jsonErrorItem `json:"errors"`
}

type jsonErrorItem struct {
	Message string `json:"message"`
	Domain  string `json:"domain"`
	Reason  string `json:"reason"`
}

// writeError writes err in the format of the route's API: the GCS JSON
// error body, or the XML API's Error document for path-style reads.
func WriteError(w http.ResponseWriter, rt *HTTPRoute, err error) {
	st, reason := httpKindOf(err)
	msg := err.Error()
	if st == http.StatusNotModified {
		w.WriteHeader(st)
		return
	}
	if rt.xml {
		writeXMLError(w, st, reason, msg)
		return
	}
	domain := "global"
	if ae, ok := errors.AsType[*store.Error](err); ok && ae.Domain != "" {
		domain = ae.Domain
	}
	WriteJSON(w, st, &jsonError{Error: jsonErrorBody{
		Code: st, Message: msg,
		Errors: []jsonErrorItem{{Message: msg, Domain: domain, Reason: reason}},
	}})
}

// writeJSON writes v as the JSON body of a response with status st.
func WriteJSON(w http.ResponseWriter, st int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		st = http.StatusInternalServerError
		b = fmt.Appendf(nil, `{"error":{"code":500,"message":%q}}`, err.Error())
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=UTF-8")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(st)
	w.Write(b)
}
