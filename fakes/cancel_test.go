package fakes_test

import (
	"net/http"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/internal/wire"
)

// cancelGRPC calls CancelResumableWrite for the session id.
func cancelGRPC(t *testing.T, cc *grpc.ClientConn, id string) error {
	t.Helper()
	_, err := rawCall(ctxT(t), cc, "CancelResumableWrite", pb(1, id))
	return err
}

// liveGeneration returns the generation of the live object name, 0 if none.
func liveGeneration(t *testing.T, srv *fakes.Server, name string) int64 {
	t.Helper()
	o, err := srv.Object(bucket, name)
	if err != nil {
		return 0
	}
	return o.Generation
}

// TestCancelGRPC: CancelResumableWrite ends an open session (nothing is
// stored, and every later call on it is NOT_FOUND, as in Google's
// testbench), is NOT_FOUND for an unknown one, and leaves a finalized one
// as it is: OK, its object stays, and late messages on it get that object
// and never a second generation.
func TestCancelGRPC(t *testing.T) {
	srv, cc := start(t)
	data := payload(3000, 4)
	late := []struct {
		name string
		call func(t *testing.T, id string) (*wire.Object, error)
	}{
		{"QueryWriteStatus", func(t *testing.T, id string) (*wire.Object, error) {
			r, err := queryWriteStatus(ctxT(t), cc, id)
			return r.GetResource(), err
		}},
		{"BidiWriteObject finish", func(t *testing.T, id string) (*wire.Object, error) {
			rs, err := bidi(ctxT(t), cc, bidiChunks(data, 1024, bidiUpload(id))...)
			if err != nil || len(rs) == 0 {
				return nil, err
			}
			return rs[len(rs)-1].GetResource(), nil
		}},
		{"WriteObject finish without data", func(t *testing.T, id string) (*wire.Object, error) {
			crc := crcOf(data)
			r, err := writeObject(ctxT(t), cc, &wire.WriteObjectRequest{
				FirstMessage: &wire.WriteObjectRequest_UploadId{UploadId: id}, WriteOffset: int64(len(data)),
				FinishWrite: true, ObjectChecksums: &wire.ObjectChecksums{Crc32C: &crc}})
			return r.GetResource(), err
		}},
	}
	tests := []struct {
		name     string
		finalize bool   // finish the session before the cancel
		id       string // "" : the session's
		cancel   codes.Code
		lateCode codes.Code // of each late call
		wantGen  bool       // an object stored, whose generation must not move
	}{
		{name: "open session", cancel: codes.OK, lateCode: codes.NotFound},
		{name: "unknown session", id: "no-such-upload", cancel: codes.NotFound, lateCode: codes.NotFound},
		{name: "finalized session", finalize: true, cancel: codes.OK, lateCode: codes.OK, wantGen: true},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := "cancel-grpc-" + string(rune('a'+i))
			id := startResumable(t, cc, spec(name))
			if _, err := bidi(ctxT(t), cc, &wire.BidiWriteObjectRequest{FirstMessage: &wire.BidiWriteObjectRequest_UploadId{UploadId: id},
				Data: &wire.BidiWriteObjectRequest_ChecksummedData{ChecksummedData: &wire.ChecksummedData{Content: data[:1024]}}, StateLookup: true}); err != nil {
				t.Fatal(err)
			}
			if tc.finalize {
				rest := bidiChunks(data, 1024, nil)[1:] // from offset 1024
				bidiUpload(id)(rest[0])
				if _, err := bidi(ctxT(t), cc, rest...); err != nil {
					t.Fatal(err)
				}
			}
			gen := liveGeneration(t, srv, name)
			if tc.id != "" {
				id = tc.id
			}
			wantCode(t, cancelGRPC(t, cc, id), tc.cancel)
			for _, l := range late {
				o, err := l.call(t, id)
				if status.Code(err) != tc.lateCode {
					t.Fatalf("%s after the cancel: %v, want %v", l.name, err, tc.lateCode)
				}
				if tc.wantGen && o.GetGeneration() != gen {
					t.Fatalf("%s after the cancel: object %v, want generation %d", l.name, o, gen)
				}
			}
			if got := liveGeneration(t, srv, name); got != gen || (gen == 0) == tc.wantGen {
				t.Fatalf("live generation %d, want %d (stored: %v)", got, gen, tc.wantGen)
			}
			wantCode(t, cancelGRPC(t, cc, id), map[bool]codes.Code{true: codes.OK, false: codes.NotFound}[tc.finalize])
		})
	}
}

// TestCancelJSON: DELETE on a session URI answers 499 and ends an open
// session, whose later PUTs and status queries are 499, as GCS answers
// them; an unknown session is 404; a finalized session keeps its object
// and answers a late PUT with it, never storing a second generation.
func TestCancelJSON(t *testing.T) {
	srv, _ := start(t)
	data := payload(3000, 5)
	tests := []struct {
		name     string
		finalize bool
		unknown  bool
		cancel   int
		late     int // a chunk, a status query and a finishing chunk after the cancel
	}{
		{name: "open session", cancel: 499, late: 499},
		{name: "unknown session", unknown: true, cancel: http.StatusNotFound, late: http.StatusNotFound},
		{name: "finalized session", finalize: true, cancel: 499, late: http.StatusOK},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := "cancel-json-" + string(rune('a'+i))
			u := startSession(t, srv, name, "")
			if r := do(t, srv, "PUT", u, data[:1000], "Content-Range", "bytes 0-999/*"); r.status != http.StatusPermanentRedirect {
				t.Fatalf("first chunk: %d %s", r.status, r.body)
			}
			if tc.finalize {
				if r := do(t, srv, "PUT", u, data[1000:], "Content-Range", "bytes 1000-2999/3000"); r.status != http.StatusOK {
					t.Fatalf("last chunk: %d %s", r.status, r.body)
				}
			}
			if tc.unknown {
				u += "x"
			}
			gen := liveGeneration(t, srv, name)
			for _, st := range []int{tc.cancel, tc.cancel} { // a second DELETE is answered alike
				if r := do(t, srv, "DELETE", u, nil); r.status != st {
					t.Fatalf("DELETE: %d %s, want %d", r.status, r.body, st)
				}
			}
			for _, req := range []struct {
				body  []byte
				crang string
			}{
				{data[1000:2000], "bytes 1000-1999/*"},
				{nil, "bytes */*"},
				{data[1000:], "bytes 1000-2999/3000"},
			} {
				if r := do(t, srv, "PUT", u, req.body, "Content-Range", req.crang); r.status != tc.late {
					t.Fatalf("PUT %s after the cancel: %d %s, want %d", req.crang, r.status, r.body, tc.late)
				}
			}
			if got := liveGeneration(t, srv, name); got != gen || (gen != 0) != tc.finalize {
				t.Fatalf("live generation %d, want %d", got, gen)
			}
		})
	}
}
