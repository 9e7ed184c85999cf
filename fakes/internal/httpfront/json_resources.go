package httpfront

import (
	"encoding/base64"
	"net/url"
	"strconv"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/core"
	"github.com/objup/objup/fakes/internal/store"
)

// objectResource is the JSON API's object resource.
type objectResource struct {
	Kind                    string              `json:"kind"`
	ID                      string              `json:"id"`
	SelfLink                string              `json:"selfLink"`
	MediaLink               string              `json:"mediaLink"`
	Name                    string              `json:"name"`
	Bucket                  string              `json:"bucket"`
	Generation              string              `json:"generation"`
	Metageneration          string              `json:"metageneration"`
	ContentType             string              `json:"contentType,omitempty"`
	ContentEncoding         string              `json:"contentEncoding,omitempty"`
	ContentDisposition      string              `json:"contentDisposition,omitempty"`
	ContentLanguage         string              `json:"contentLanguage,omitempty"`
	CacheControl            string              `json:"cacheControl,omitempty"`
	StorageClass            string              `json:"storageClass"`
	Size                    string              `json:"size"`
	MD5Hash                 string              `json:"md5Hash,omitempty"`
	CRC32C                  string              `json:"crc32c"`
	Etag                    string              `json:"etag"`
	TimeCreated             string              `json:"timeCreated"`
	Updated                 string              `json:"updated"`
	TimeStorageClassUpdated string              `json:"timeStorageClassUpdated"`
	TimeFinalized           string              `json:"timeFinalized,omitempty"`
	TimeDeleted             string              `json:"timeDeleted,omitempty"`
	CustomTime              string              `json:"customTime,omitempty"`
	Metadata                map[string]string   `json:"metadata,omitempty"`
	ACL                     []*core.ACLResource `json:"acl,omitempty"`
	KMSKeyName              string              `json:"kmsKeyName,omitempty"`
	TemporaryHold           bool                `json:"temporaryHold,omitempty"`
	EventBasedHold          *bool               `json:"eventBasedHold,omitempty"`
	Retention               *retentionResource  `json:"retention,omitempty"`
	Contexts                *contextsResource   `json:"contexts,omitempty"`
	ComponentCount          int                 `json:"componentCount,omitempty"`
}

// resource returns o as the JSON API's object resource; base is the
// server's URL as the client reached it.
func resource(b *store.Bucket, o *store.Object, base string) *objectResource {
	gen := strconv.FormatInt(o.Generation(), 10)
	path := "/b/" + url.PathEscape(b.Name()) + "/o/" + url.PathEscape(o.Name())
	r := &objectResource{
		Kind:                    "storage#object",
		ID:                      b.Name() + "/" + o.Name() + "/" + gen,
		SelfLink:                base + "/storage/v1" + path,
		MediaLink:               base + "/download/storage/v1" + path + "?generation=" + gen + "&alt=media",
		Name:                    o.Name(),
		Bucket:                  b.Name(),
		Generation:              gen,
		Metageneration:          strconv.FormatInt(o.Metageneration(), 10),
		ContentType:             o.Attrs().ContentType,
		ContentEncoding:         o.Attrs().ContentEncoding,
		ContentDisposition:      o.Attrs().ContentDisposition,
		ContentLanguage:         o.Attrs().ContentLanguage,
		CacheControl:            o.Attrs().CacheControl,
		StorageClass:            o.Attrs().StorageClass,
		Size:                    strconv.FormatInt(o.Size(), 10),
		MD5Hash:                 md5Text(o),
		CRC32C:                  encodeCRC32C(o.CRC32C()),
		Etag:                    api.ObjectETag(o.Generation(), o.Metageneration()),
		TimeCreated:             core.FormatTime(o.Created()),
		Updated:                 core.FormatTime(o.Updated()),
		TimeStorageClassUpdated: core.FormatTime(o.Created()),
		TimeFinalized:           core.FormatTime(o.FinalizeTime()),
		TimeDeleted:             core.FormatTime(o.Deleted()),
		CustomTime:              core.FormatTime(o.Attrs().CustomTime),
		Metadata:                o.Attrs().Metadata,
	}
	setJSON(o.Attrs().Extra, r, b.Name(), o.Name(), o.Generation(), o.Metageneration(), base)
	return r
}

// md5Text is the JSON API's form of o's MD5, or "" if o has none.
func md5Text(o *store.Object) string {
	if !o.HasMD5() {
		return ""
	}
	return base64.StdEncoding.EncodeToString(o.MD5())
}

// objectList is the JSON API's objects.list response.
type objectList struct {
	Kind          string            `json:"kind"`
	NextPageToken string            `json:"nextPageToken,omitempty"`
	Prefixes      []string          `json:"prefixes,omitempty"`
	Items         []*objectResource `json:"items,omitempty"`
}
