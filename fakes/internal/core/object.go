package core

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/fakes/internal/writes"
	"github.com/objup/objup/internal/wire"
)

// maxChunk is the service's limit on the content of one message, both ways
// (MAX_WRITE_CHUNK_BYTES and MAX_READ_CHUNK_BYTES).
const MaxChunk = writes.MaxMessage

// toObject converts a stored object into the API's Object. The Object shares
// o's metadata map, which is never written once stored: the caller may
// marshal it but must not change it.
func ToObject(b *store.Bucket, o *store.Object) *wire.Object {
	crc := o.CRC32C()
	w := &wire.Object{
		Name:                   o.Name(),
		Bucket:                 b.ResName(),
		Etag:                   api.ObjectETag(o.Generation(), o.Metageneration()),
		Generation:             o.Generation(),
		Metageneration:         o.Metageneration(),
		StorageClass:           o.Attrs().StorageClass,
		Size:                   o.Size(),
		ContentEncoding:        o.Attrs().ContentEncoding,
		ContentDisposition:     o.Attrs().ContentDisposition,
		CacheControl:           o.Attrs().CacheControl,
		ContentLanguage:        o.Attrs().ContentLanguage,
		ContentType:            o.Attrs().ContentType,
		CreateTime:             timestamp(o.Created()),
		UpdateTime:             timestamp(o.Updated()),
		FinalizeTime:           timestamp(o.FinalizeTime()),
		UpdateStorageClassTime: timestamp(o.Created()),
		CustomTime:             timestamp(o.Attrs().CustomTime),
		Metadata:               o.Attrs().Metadata,
		Checksums:              &wire.ObjectChecksums{Crc32C: &crc},
		ComponentCount:         int32(o.ComponentCount()),
	}
	if o.HasMD5() {
		w.Checksums.Md5Hash = o.MD5()
	}
	setExtra(o.Attrs().Extra, w)
	return w
}

// timestamp converts Unix microseconds (0: unset) into a Timestamp.
func timestamp(us int64) *timestamppb.Timestamp {
	if us == 0 {
		return nil
	}
	return timestamppb.New(time.UnixMicro(us))
}
