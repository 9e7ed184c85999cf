package sink

import (
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/fakes/internal/writes"
	"github.com/objup/objup/internal/wire"
)

// Appendable objects, as the fake writes them (see writes.Appendable),
// with the content dropped: the sink keeps their writer state, size and
// CRC32C, by bucket and name, in a registry as bounded as the sessions'
// (the oldest are forgotten first). A stream whose write_object_spec
// sets appendable creates one, empty and unfinalized, and is answered at
// once with it and a write handle; flush persists what was received,
// state_lookup answers with the persisted size, its CRC32C and the
// handle; a clean half-close persists and answers the same; a stream
// that ends any other way loses what it did not flush; finish_write
// persists and finalizes (the object has no MD5). An append_object_spec
// resumes the writer with its handle, or takes the object over without
// one. A new appendable write to the name replaces the object (its
// writer then gets codes.NotFound); a write that is not appendable is
// refused while it is unfinalized.

// WithZonalBucket makes the bucket name zonal, as
// [github.com/objup/objup/fakes.WithZonalBucket] does for the fake: it
// takes appendable writes only, any other write into it fails with
// codes.FailedPrecondition, and its objects' storage class is RAPID.
// Give it once per bucket.
func WithZonalBucket(name string) Option {
	return optionFunc(func(c *config) {
		if c.zonal == nil {
			c.zonal = make(map[string]bool)
		}
		c.zonal[name] = true
	})
}

// appendKey is the registry key of the appendable object name in bucket.
func appendKey(bucket, name string) string { return bucket + "/" + name }

// openAppendable makes the new upload up, of an appendable object, the
// live appendable object of its name, written by stream st.
func (k *Server) openAppendable(st *writeStream, up *upload) {
	up.appendable, up.MD5 = true, nil
	up.app = writes.Appendable{Name: up.res.GetName(), Gen: k.generation(), Epoch: 1, Writer: st}
	key := appendKey(up.bucket, up.res.GetName())
	if old, ok := k.appends.Get(key); ok {
		old.mu.Lock()
		old.gone = true
		old.mu.Unlock()
	}
	k.appends.Add(key, up)
	k.appendable.Add(1)
	st.up, st.epoch, st.sendResource = up, 1, true
}

// unfinalized returns the error for a write that is not appendable to
// the name of an unfinalized appendable object, else nil. It costs one
// atomic load until the sink has written an appendable object.
func (k *Server) unfinalized(bucket, name string) error {
	if k.appendable.Load() == 0 {
		return nil
	}
	up, ok := k.appends.Get(appendKey(bucket, name))
	if !ok {
		return nil
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if up.gone || up.result != nil {
		return nil
	}
	return status.Errorf(codes.FailedPrecondition, "object %q generation %d is an unfinalized appendable object: it cannot be overwritten by a write that is not appendable until it is finalized", name, up.app.Gen)
}

// openAppend reopens the appendable object an append_object_spec names,
// for stream st.
func (k *Server) openAppend(st *writeStream, f *api.WriteMsg) error {
	spec := f.AppendSpec
	if f.Sums != nil && !f.Finish {
		return writes.ErrAppendSums
	}
	if err := api.CheckCommon(f.Common); err != nil {
		return err
	}
	bucket, err := api.ParseBucket(spec.GetBucket())
	if err != nil {
		return err
	}
	up, ok := k.appends.Get(appendKey(bucket, spec.GetObject()))
	if !ok || spec.GetGeneration() != 0 && spec.GetGeneration() != up.app.Gen {
		return store.ErrObjectNotFound(bucket, spec.GetObject(), spec.GetGeneration())
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if up.gone {
		return store.ErrObjectNotFound(bucket, spec.GetObject(), spec.GetGeneration())
	}
	takeover, err := up.app.Reopen(st.ctx, st, spec, up.result != nil, &up.State, func() error {
		return api.ReadConditions(nil, nil, spec.IfMetagenerationMatch, spec.IfMetagenerationNotMatch).CheckVersion(true, up.app.Gen, 1)
	})
	if err != nil {
		return err
	}
	st.up, st.epoch, st.sendResource = up, up.app.Epoch, takeover
	return nil
}

// abandon ends stream st's part in its appendable write: what it did not
// persist is lost.
func (st *writeStream) abandon() {
	up := st.up
	if up == nil || !up.appendable {
		return
	}
	up.mu.Lock()
	up.app.Abandon(st, up.result != nil, &up.State)
	up.mu.Unlock()
}

// finalizeAppendable checks the declared checksums of the appendable
// write up, persists it and finalizes it. A mismatch fails with
// codes.InvalidArgument and leaves the object unfinalized, as the fake
// does. up.mu is held.
func (k *Server) finalizeAppendable(up *upload) (*wire.Object, error) {
	want := up.Sums
	up.Sums = nil
	if err := up.CheckSize(); err != nil {
		return nil, err
	}
	up.app.Persist(&up.State)
	if want != nil {
		if len(want.Md5Hash) > 0 {
			return nil, status.Error(codes.InvalidArgument, "object_checksums.md5_hash: appendable objects have no MD5")
		}
		if want.Crc32C != nil && *want.Crc32C != up.CRC {
			return nil, status.Errorf(codes.InvalidArgument, "object CRC32C mismatch: sent %#08x, computed %#08x over %d bytes; the object stays unfinalized", *want.Crc32C, up.CRC, up.Size)
		}
	}
	up.result = k.object(up, up.app.Gen, up.Size, up.CRC, true, nil)
	k.keep(up.bucket, up.result, 0)
	k.objects.Add(1)
	k.bytes.Add(up.Size)
	return up.result, nil
}

// appendResponse is the answer of an appendable write that has not
// finalized, as the fake gives it: after the first message of a stream
// that created or took over the object, the object with the persisted
// bytes; else the persisted size and its CRC32C; and the write handle.
func (st *writeStream) appendResponse(first bool) *wire.BidiWriteObjectResponse {
	up := st.up
	up.mu.Lock()
	defer up.mu.Unlock()
	resp := up.app.Response(st.epoch)
	if first && st.sendResource && up.result == nil {
		resp.WriteStatus = &wire.BidiWriteObjectResponse_Resource{Resource: st.k.object(up, up.app.Gen, up.app.Persisted, up.app.PersistedCRC, false, nil)}
		resp.PersistedDataChecksums = nil
	}
	return resp
}

// object returns the Object of upload up: generation gen, size bytes of
// CRC32C crc and MD5 sum (nil for none), finalized if final.
func (k *Server) object(up *upload, gen, size int64, crc uint32, final bool, sum []byte) *wire.Object {
	ts := timestamppb.New(time.UnixMicro(gen))
	res := up.res
	class := res.GetStorageClass()
	switch {
	case k.cfg.zonal[up.bucket]:
		class = store.RapidStorageClass
	case class == "":
		class = store.DefaultStorageClass
	}
	o := &wire.Object{
		Name:                   res.GetName(),
		Bucket:                 api.BucketPrefix + up.bucket,
		Etag:                   api.ObjectETag(gen, 1),
		Generation:             gen,
		Metageneration:         1,
		StorageClass:           class,
		Size:                   size,
		ContentEncoding:        res.GetContentEncoding(),
		ContentDisposition:     res.GetContentDisposition(),
		CacheControl:           res.GetCacheControl(),
		ContentLanguage:        res.GetContentLanguage(),
		ContentType:            res.GetContentType(),
		CreateTime:             ts,
		UpdateTime:             ts,
		UpdateStorageClassTime: ts,
		CustomTime:             res.GetCustomTime(),
		Metadata:               res.GetMetadata(),
		Checksums:              &wire.ObjectChecksums{Crc32C: &crc, Md5Hash: sum},
	}
	if final {
		o.FinalizeTime = timestamppb.Now()
		if up.appendable {
			o.UpdateTime = o.FinalizeTime
		} else {
			o.FinalizeTime = ts
		}
	}
	return o
}

// checkZonal refuses a write that is not appendable into a zonal bucket.
func (k *Server) checkZonal(bucket string, spec *wire.WriteObjectSpec) error {
	if k.cfg.zonal[bucket] && !spec.GetAppendable() {
		return store.ErrZonal(bucket, "a write without write_object_spec.appendable")
	}
	return nil
}
