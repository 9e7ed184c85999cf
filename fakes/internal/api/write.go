package api

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes/internal/store"
	"github.com/objup/objup/internal/wire"
)

// SpecConditions returns the preconditions of a write.
func SpecConditions(spec *wire.WriteObjectSpec) *store.Conditions {
	return ReadConditions(spec.IfGenerationMatch, spec.IfGenerationNotMatch, spec.IfMetagenerationMatch, spec.IfMetagenerationNotMatch)
}

// WriteMsg is what WriteObjectRequest and BidiWriteObjectRequest have in
// common.
type WriteMsg struct {
	First      bool
	UploadID   string
	Spec       *wire.WriteObjectSpec
	AppendSpec *wire.AppendObjectSpec
	Common     *wire.CommonObjectRequestParams
	Offset     int64
	Data       *wire.ChecksummedData
	Sums       *wire.ObjectChecksums
	Finish     bool
	Lookup     bool
	Flush      bool
}

// WriteMsgOf returns the parts of a WriteObject message.
func WriteMsgOf(r *wire.WriteObjectRequest) WriteMsg {
	return WriteMsg{
		First:    r.FirstMessage != nil,
		UploadID: r.GetUploadId(),
		Spec:     r.GetWriteObjectSpec(),
		Common:   r.GetCommonObjectRequestParams(),
		Offset:   r.GetWriteOffset(),
		Data:     r.GetChecksummedData(),
		Sums:     r.GetObjectChecksums(),
		Finish:   r.GetFinishWrite(),
	}
}

// BidiMsgOf returns the parts of a BidiWriteObject message.
func BidiMsgOf(r *wire.BidiWriteObjectRequest) WriteMsg {
	return WriteMsg{
		First:      r.FirstMessage != nil,
		UploadID:   r.GetUploadId(),
		Spec:       r.GetWriteObjectSpec(),
		AppendSpec: r.GetAppendObjectSpec(),
		Common:     r.GetCommonObjectRequestParams(),
		Offset:     r.GetWriteOffset(),
		Data:       r.GetChecksummedData(),
		Sums:       r.GetObjectChecksums(),
		Finish:     r.GetFinishWrite(),
		Lookup:     r.GetStateLookup(),
		Flush:      r.GetFlush(),
	}
}

// WriteResponse is WriteObject's answer: the object once finalized, else
// the persisted size.
func WriteResponse(obj *wire.Object, size int64) *wire.WriteObjectResponse {
	if obj != nil {
		return &wire.WriteObjectResponse{WriteStatus: &wire.WriteObjectResponse_Resource{Resource: obj}}
	}
	return &wire.WriteObjectResponse{WriteStatus: &wire.WriteObjectResponse_PersistedSize{PersistedSize: size}}
}

// BidiResponse is BidiWriteObject's answer: the object once finalized,
// else the persisted size.
func BidiResponse(obj *wire.Object, size int64) *wire.BidiWriteObjectResponse {
	if obj != nil {
		return &wire.BidiWriteObjectResponse{WriteStatus: &wire.BidiWriteObjectResponse_Resource{Resource: obj}}
	}
	return &wire.BidiWriteObjectResponse{WriteStatus: &wire.BidiWriteObjectResponse_PersistedSize{PersistedSize: size}}
}

// WriteStatus is QueryWriteStatus's answer for a session: NotFound once it
// is gone, its object once finalized, else its persisted size. The fake and
// the sink share it.
func WriteStatus(gone bool, id string, result *wire.Object, size int64) (*wire.QueryWriteStatusResponse, error) {
	if gone {
		return nil, status.Errorf(codes.NotFound, "upload %q not found", id)
	}
	if result != nil {
		return &wire.QueryWriteStatusResponse{WriteStatus: &wire.QueryWriteStatusResponse_Resource{Resource: result}}, nil
	}
	return &wire.QueryWriteStatusResponse{WriteStatus: &wire.QueryWriteStatusResponse_PersistedSize{PersistedSize: size}}, nil
}

// ReadConditions returns the preconditions of a read, stat or delete.
func ReadConditions(genMatch, genNotMatch, metaMatch, metaNotMatch *int64) *store.Conditions {
	if genMatch == nil && genNotMatch == nil && metaMatch == nil && metaNotMatch == nil {
		return nil
	}
	return &store.Conditions{GenMatch: genMatch, GenNotMatch: genNotMatch, MetaMatch: metaMatch, MetaNotMatch: metaNotMatch}
}

// ErrLateFirst answers a write message after a stream's first that names
// the write again (upload_id or write_object_spec).
var ErrLateFirst = status.Error(codes.InvalidArgument, "upload_id or write_object_spec is allowed only in the first message of a stream")
