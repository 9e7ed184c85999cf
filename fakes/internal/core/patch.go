package core

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/objup/objup/fakes/internal/store"
)

// objectMetadata is an object resource as a client sends it, to insert an
// object (absent fields are empty) or to patch one (absent fields are nil,
// null ones hold "null").
type ObjectMetadata map[string]json.RawMessage

// isNull reports whether a field's value is JSON null (which json.Unmarshal
// stores as an empty RawMessage).
func IsNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// str returns the string field key: its value, whether it was present, and
// whether it was null.
func (m ObjectMetadata) Str(key string) (v string, present, null bool, err error) {
	raw, ok := m[key]
	if !ok {
		return "", false, false, nil
	}
	if IsNull(raw) {
		return "", true, true, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", true, false, store.Errorf(store.KindInvalid, "field %s: %v", key, err)
	}
	return v, true, false, nil
}

// apply sets a's writable fields from m. With patch, absent fields keep
// their values, null ones are cleared, and metadata keys merge (a null value
// removes its key); without, as for objects.update and inserts, absent
// fields are cleared, but for the ACL, which an absent acl keeps.
func (m ObjectMetadata) Apply(a *store.Attrs, patch bool) error {
	for _, f := range unsupportedFields {
		if raw, ok := m[f]; ok && !IsNull(raw) && string(raw) != "false" {
			return store.Errorf(store.KindUnimplemented, "fakes: setting %s is not implemented by the fake", f)
		}
	}
	if err := m.applyExtra(a, patch); err != nil {
		return err
	}
	for _, f := range writableFields {
		v, present, _, err := m.Str(f.json)
		if err != nil {
			return err
		}
		if present || !patch {
			*f.dst(a) = v
		}
	}
	if v, present, null, err := m.Str("customTime"); err != nil {
		return err
	} else if present && !null {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return store.Errorf(store.KindInvalid, "customTime %q is not an RFC 3339 time", v)
		}
		us := t.UnixMicro()
		if a.CustomTime != 0 && us < a.CustomTime {
			return store.Errorf(store.KindInvalid, "customTime can't be moved earlier than its current value %s", FormatTime(a.CustomTime))
		}
		a.CustomTime = us
	} else if (present || !patch) && a.CustomTime != 0 {
		return store.Errorf(store.KindInvalid, "customTime can't be removed once set")
	}
	raw, present := m["metadata"]
	switch {
	case !present && patch:
	case !present || IsNull(raw):
		a.Metadata = nil
	default:
		var kv map[string]*string
		if err := json.Unmarshal(raw, &kv); err != nil {
			return store.Errorf(store.KindInvalid, "field metadata: %v", err)
		}
		if !patch {
			a.Metadata = nil
		}
		for k, v := range kv {
			if v == nil {
				delete(a.Metadata, k)
				continue
			}
			if a.Metadata == nil {
				a.Metadata = make(map[string]string, len(kv))
			}
			a.Metadata[k] = *v
		}
		if len(a.Metadata) == 0 {
			a.Metadata = nil
		}
	}
	return nil
}

// applyExtra sets the acl, temporaryHold and eventBasedHold of a from m,
// as apply does. A request that names none of them costs nothing more.
func (m ObjectMetadata) applyExtra(a *store.Attrs, patch bool) error {
	rawACL, setACL := m["acl"]
	rawTemp, setTemp := m["temporaryHold"]
	rawEvent, setEvent := m["eventBasedHold"]
	// Without patch, absent holds are cleared: there is something to
	// clear only if a has an Extra.
	clearHolds := !patch && a.Extra != nil
	if !setACL && !setTemp && !setEvent && !clearHolds {
		return nil
	}
	var acl []store.ACLEntry
	if setACL {
		var err error
		if acl, err = parseACL(rawACL, "acl", false); err != nil {
			return err
		}
	}
	temp, err := jsonBool(rawTemp, "temporaryHold")
	if err != nil {
		return err
	}
	event, err := jsonBool(rawEvent, "eventBasedHold")
	if err != nil {
		return err
	}
	editExtra(a, func(x *store.Extra) {
		if setACL {
			x.ACL = acl
		}
		if setTemp || !patch {
			x.TemporaryHold = temp
		}
		if setEvent || !patch {
			x.EventBasedHold = nil
			if event {
				x.EventBasedHold = &event
			}
		}
	})
	return nil
}

// jsonInt reads an int64 the JSON API sends as a string or a number; an
// absent one is 0.
func JSONInt(raw json.RawMessage, what string) (int64, error) {
	if len(raw) == 0 {
		return 0, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, store.Errorf(store.KindInvalid, "%s %q is not an integer", what, s)
		}
		return n, nil
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, store.Errorf(store.KindInvalid, "%s %s is not an integer", what, raw)
	}
	return n, nil
}

func FormatTime(us int64) string {
	if us == 0 {
		return ""
	}
	return time.UnixMicro(us).UTC().Format(jsonTime)
}

// writableFields are the object fields a client may set, by JSON name, with
// the object field each one sets.
var writableFields = []struct {
	json string
	dst  func(*store.Attrs) *string
}{
	{"contentType", func(a *store.Attrs) *string { return &a.ContentType }},
	{"contentEncoding", func(a *store.Attrs) *string { return &a.ContentEncoding }},
	{"contentDisposition", func(a *store.Attrs) *string { return &a.ContentDisposition }},
	{"contentLanguage", func(a *store.Attrs) *string { return &a.ContentLanguage }},
	{"cacheControl", func(a *store.Attrs) *string { return &a.CacheControl }},
}

// unsupportedFields are writable fields the fake does not implement: a
// request that sets one fails with 501 rather than being half-applied.
var unsupportedFields = []string{"retention", "kmsKeyName", "contexts"}

// jsonBool reads a boolean field; absent or null is false.
func jsonBool(raw json.RawMessage, field string) (bool, error) {
	var v bool
	if IsNull(raw) {
		return false, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return false, store.Errorf(store.KindInvalid, "field %s: %v", field, err)
	}
	return v, nil
}

// jsonTime is the JSON API's time format: RFC 3339 in UTC, milliseconds.
const jsonTime = "2006-01-02T15:04:05.000Z07:00"
