package httpfront

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"

	"github.com/objup/objup/fakes/internal/store"
)

// The notification config methods of a bucket: notifications.list,
// insert, get and delete. The configs are stored and returned; no message
// is sent.

// notificationResource is the JSON API's notification resource; its field
// names are snake case, as GCS has them.
type notificationResource struct {
	Kind             string            `json:"kind"`
	ID               string            `json:"id"`
	SelfLink         string            `json:"selfLink"`
	Topic            string            `json:"topic"`
	PayloadFormat    string            `json:"payload_format"`
	EventTypes       []string          `json:"event_types,omitempty"`
	ObjectNamePrefix string            `json:"object_name_prefix,omitempty"`
	CustomAttributes map[string]string `json:"custom_attributes,omitempty"`
	Etag             string            `json:"etag"`
}

func notificationJSON(b *store.Bucket, n *store.Notification, base string) *notificationResource {
	return &notificationResource{
		Kind: "storage#notification", ID: n.ID,
		SelfLink: base + "/storage/v1/b/" + url.PathEscape(b.Name()) + "/notificationConfigs/" + n.ID,
		Topic:    n.Topic, PayloadFormat: n.PayloadFormat, EventTypes: n.EventTypes,
		ObjectNamePrefix: n.ObjectNamePrefix, CustomAttributes: n.CustomAttributes, Etag: n.ID,
	}
}

// routeNotifications routes a request under "b/BUCKET/notificationConfigs";
// id is the path after it.
func (s *Server) routeNotifications(r *http.Request, bkt, id string, hasID bool) *HTTPRoute {
	m := r.Method
	switch {
	case !hasID && m == http.MethodGet:
		return to("notifications.list", bkt, "", func(w http.ResponseWriter, r *http.Request) error { return s.listNotifications(w, r, bkt) })
	case !hasID && m == http.MethodPost:
		return to("notifications.insert", bkt, "", func(w http.ResponseWriter, r *http.Request) error { return s.insertNotification(w, r, bkt) })
	case hasID && m == http.MethodGet:
		return to("notifications.get", bkt, "", func(w http.ResponseWriter, r *http.Request) error { return s.getNotification(w, r, bkt, id) })
	case hasID && m == http.MethodDelete:
		return to("notifications.delete", bkt, "", func(w http.ResponseWriter, r *http.Request) error { return s.deleteNotification(w, bkt, id) })
	}
	rt := unimplemented(m+" notificationConfigs", m+" "+r.URL.Path)
	rt.bucket = bkt
	return rt
}

// listNotifications serves notifications.list.
func (s *Server) listNotifications(w http.ResponseWriter, r *http.Request, bkt string) error {
	b, err := s.Store.Bucket(bkt)
	if err != nil {
		return err
	}
	ns, err := b.Notifications()
	if err != nil {
		return err
	}
	out := struct {
		Kind  string                  `json:"kind"`
		Items []*notificationResource `json:"items"`
	}{Kind: "storage#notifications", Items: []*notificationResource{}}
	for _, n := range ns {
		out.Items = append(out.Items, notificationJSON(b, n, baseURL(r)))
	}
	WriteJSON(w, http.StatusOK, out)
	return nil
}

// topicPattern is a Pub/Sub topic as a notification config names it.
var topicPattern = regexp.MustCompile(`^//pubsub\.googleapis\.com/projects/[^/]+/topics/[^/]+$`)

// eventTypes are the event types a notification config may name.
var eventTypes = []string{"OBJECT_FINALIZE", "OBJECT_METADATA_UPDATE", "OBJECT_DELETE", "OBJECT_ARCHIVE"}

// insertNotification serves notifications.insert: a topic
// (//pubsub.googleapis.com/projects/P/topics/T, or projects/P/topics/T) and
// a payload_format (JSON_API_V1 or NONE) are required; event_types,
// object_name_prefix and custom_attributes are kept.
func (s *Server) insertNotification(w http.ResponseWriter, r *http.Request, bkt string) error {
	var in struct {
		Topic            string            `json:"topic"`
		PayloadFormat    string            `json:"payload_format"`
		EventTypes       []string          `json:"event_types"`
		ObjectNamePrefix string            `json:"object_name_prefix"`
		CustomAttributes map[string]string `json:"custom_attributes"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, maxMetadataBody)).Decode(&in); err != nil && !errors.Is(err, io.EOF) {
		return store.Errorf(store.KindInvalid, "the request body is not a JSON notification resource: %v", err)
	}
	topic := in.Topic
	if !topicPattern.MatchString(topic) {
		topic = "//pubsub.googleapis.com/" + topic
	}
	switch {
	case in.Topic == "":
		return store.Errorf(store.KindInvalid, "required field: topic")
	case !topicPattern.MatchString(topic):
		return store.Errorf(store.KindInvalid, "topic %q is not //pubsub.googleapis.com/projects/PROJECT/topics/TOPIC", in.Topic)
	case in.PayloadFormat != "JSON_API_V1" && in.PayloadFormat != "NONE":
		return store.Errorf(store.KindInvalid, "payload_format %q is not JSON_API_V1 or NONE", in.PayloadFormat)
	}
	for _, e := range in.EventTypes {
		if !slices.Contains(eventTypes, e) {
			return store.Errorf(store.KindInvalid, "event type %q is not one of %v", e, eventTypes)
		}
	}
	b, err := s.Store.Bucket(bkt)
	if err != nil {
		return err
	}
	n, err := b.AddNotification(store.Notification{
		Topic: topic, PayloadFormat: in.PayloadFormat, EventTypes: in.EventTypes,
		ObjectNamePrefix: in.ObjectNamePrefix, CustomAttributes: in.CustomAttributes,
	})
	if err != nil {
		return err
	}
	WriteJSON(w, http.StatusOK, notificationJSON(b, n, baseURL(r)))
	return nil
}

// getNotification serves notifications.get.
func (s *Server) getNotification(w http.ResponseWriter, r *http.Request, bkt, id string) error {
	b, err := s.Store.Bucket(bkt)
	if err != nil {
		return err
	}
	n, err := b.Notification(id)
	if err != nil {
		return err
	}
	WriteJSON(w, http.StatusOK, notificationJSON(b, n, baseURL(r)))
	return nil
}

// deleteNotification serves notifications.delete.
func (s *Server) deleteNotification(w http.ResponseWriter, bkt, id string) error {
	b, err := s.Store.Bucket(bkt)
	if err != nil {
		return err
	}
	if err := b.DeleteNotification(id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
