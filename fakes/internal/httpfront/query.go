package httpfront

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/objup/objup/fakes/internal/store"
)

// queryInt parses the integer query parameter key; absent is 0.
func queryInt(q url.Values, key string) (int64, error) {
	v := q.Get(key)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, store.Errorf(store.KindInvalid, "invalid value %q for query parameter %s", v, key)
	}
	return n, nil
}

// queryConditions reads the JSON API's precondition parameters.
func queryConditions(q url.Values) (*store.Conditions, error) {
	var c store.Conditions
	set := false
	for _, p := range []struct {
		key string
		dst **int64
	}{
		{"ifGenerationMatch", &c.GenMatch},
		{"ifGenerationNotMatch", &c.GenNotMatch},
		{"ifMetagenerationMatch", &c.MetaMatch},
		{"ifMetagenerationNotMatch", &c.MetaNotMatch},
	} {
		if !q.Has(p.key) {
			continue
		}
		n, err := queryInt(q, p.key)
		if err != nil {
			return nil, err
		}
		*p.dst, set = &n, true
	}
	if !set {
		return nil, nil
	}
	return &c, nil
}

// queryBool reads a boolean query parameter; absent is false.
func queryBool(q url.Values, key string) (bool, error) {
	v := q.Get(key)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, store.Errorf(store.KindInvalid, "invalid value %q for query parameter %s", v, key)
	}
	return b, nil
}

// baseURL is the scheme and host a client used to reach the server, for the
// links and session URIs the server hands out.
func baseURL(r *http.Request) string {
	if r.TLS != nil {
		return "https://" + r.Host
	}
	return "http://" + r.Host
}
