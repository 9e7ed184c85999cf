package store

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"slices"
	"strings"
	"sync"
)

// MaxHMACKeys bounds the HMAC keys a store keeps (GCS allows 10 per
// service account; the fake does not count per account).
const MaxHMACKeys = 10000

// HMAC key states.
const (
	HMACActive   = "ACTIVE"
	HMACInactive = "INACTIVE"
)

// HMACKey is an HMAC key's metadata, and its secret. A key the store handed
// out is never modified: an update stores a changed copy.
type HMACKey struct {
	AccessID       string
	ProjectID      string
	ServiceAccount string
	State          string
	Created        int64 // Unix microseconds
	Updated        int64
	Etag           string
	Secret         string // base64; given out only when the key is created
	serial         int64
}

// hmacKeys is a store's HMAC keys by access ID. The zero value is empty.
type hmacKeys struct {
	mu   sync.Mutex
	keys map[string]*HMACKey
}

// CreateHMACKey creates an active HMAC key for the service account email
// in project and returns it, with its secret.
func (s *Store) CreateHMACKey(project, email string) (*HMACKey, error) {
	if email == "" {
		return nil, Errorf(KindInvalid, "required parameter: serviceAccountEmail")
	}
	h := &s.hmac
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.keys) >= MaxHMACKeys {
		return nil, Errorf(KindInvalid, "the fake keeps at most %d HMAC keys: delete some", MaxHMACKeys)
	}
	if h.keys == nil {
		h.keys = make(map[string]*HMACKey)
	}
	var id [35]byte
	rand.Read(id[:])
	secret := make([]byte, 30)
	rand.Read(secret)
	now := NowMicro()
	k := &HMACKey{
		AccessID:       "GOOG1E" + base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(id[:])[:55],
		ProjectID:      project,
		ServiceAccount: email,
		State:          HMACActive,
		Created:        now,
		Updated:        now,
		Secret:         base64.StdEncoding.EncodeToString(secret),
		serial:         1,
		Etag:           MetaEtag(1),
	}
	if err := s.saveHMAC(k, false); err != nil {
		return nil, err
	}
	h.keys[k.AccessID] = k
	return k, nil
}

// HMACKey returns the key accessID; the caller must not change it.
func (s *Store) HMACKey(accessID string) (*HMACKey, error) {
	s.hmac.mu.Lock()
	defer s.hmac.mu.Unlock()
	return s.hmac.getLocked(accessID)
}

func (h *hmacKeys) getLocked(accessID string) (*HMACKey, error) {
	k := h.keys[accessID]
	if k == nil {
		return nil, Errorf(KindNotFound, "HMAC key %q not found", accessID)
	}
	return k, nil
}

// HMACKeys returns the keys of the service account email ("": all) whose
// access IDs sort after after, in access ID order, at most n, and whether
// there are more.
func (s *Store) HMACKeys(email, after string, n int) (out []*HMACKey, more bool) {
	s.hmac.mu.Lock()
	for _, k := range s.hmac.keys {
		if (email == "" || k.ServiceAccount == email) && k.AccessID > after {
			out = append(out, k)
		}
	}
	s.hmac.mu.Unlock()
	slices.SortFunc(out, func(a, b *HMACKey) int { return strings.Compare(a.AccessID, b.AccessID) })
	if len(out) > n {
		return out[:n], true
	}
	return out, false
}

// UpdateHMACKey sets the state of key accessID to ACTIVE or INACTIVE, if
// etag is "" or the key's etag (else 412), and returns the key.
func (s *Store) UpdateHMACKey(accessID, state, etag string) (*HMACKey, error) {
	if state != HMACActive && state != HMACInactive {
		return nil, Errorf(KindInvalid, "an HMAC key's state is ACTIVE or INACTIVE, not %q", state)
	}
	h := &s.hmac
	h.mu.Lock()
	defer h.mu.Unlock()
	k, err := h.getLocked(accessID)
	if err != nil {
		return nil, err
	}
	if etag != "" && etag != k.Etag {
		return nil, Errorf(KindPrecondition, "precondition failed: the HMAC key's etag is %q, not %q", k.Etag, etag)
	}
	c := *k
	c.State = state
	c.serial++
	c.Etag = MetaEtag(c.serial)
	c.Updated = max(NowMicro(), k.Updated)
	if err := s.saveHMAC(&c, false); err != nil {
		return nil, err
	}
	h.keys[accessID] = &c
	return &c, nil
}

// DeleteHMACKey deletes key accessID, which must be INACTIVE (else 400).
// A deleted key is forgotten.
func (s *Store) DeleteHMACKey(accessID string) error {
	h := &s.hmac
	h.mu.Lock()
	defer h.mu.Unlock()
	k, err := h.getLocked(accessID)
	if err != nil {
		return err
	}
	if k.State == HMACActive {
		return Errorf(KindInvalid, "HMAC key %q is ACTIVE: deactivate it before deleting it", accessID)
	}
	if err := s.saveHMAC(k, true); err != nil {
		return err
	}
	delete(h.keys, accessID)
	return nil
}
