package fakes_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/internal/wire"
)

// TestAppendableFinishOffset checks the write_offset of a finish_write
// without content on an appendable write: none (0), as the official Python
// client's appendable writer sends it, or any offset up to the bytes
// received, finalizes everything received, as the testbench takes it; an
// offset past them is a gap.
func TestAppendableFinishOffset(t *testing.T) {
	const k = 1 << 10
	body := payload(4*k, 93)
	crc := crcOf(body)
	for _, tc := range []struct {
		name string
		fin  *wire.BidiWriteObjectRequest
		code codes.Code
	}{
		{"no offset", &wire.BidiWriteObjectRequest{FinishWrite: true}, codes.OK},
		{"no offset, with the object's CRC32C", &wire.BidiWriteObjectRequest{FinishWrite: true, ObjectChecksums: &wire.ObjectChecksums{Crc32C: &crc}}, codes.OK},
		{"inside the bytes received", &wire.BidiWriteObjectRequest{WriteOffset: k, FinishWrite: true}, codes.OK},
		{"at the end", finish(4*k, body), codes.OK},
		{"past the end", &wire.BidiWriteObjectRequest{WriteOffset: 4*k + 1, FinishWrite: true}, codes.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, cc := start(t)
			ctx := ctxT(t)
			// The Python client's sequence: data, a flush with
			// state_lookup (no offset), more data, then finish_write.
			out, err := bidi(ctx, cc, creating("obj", data(0, body[:2*k])),
				&wire.BidiWriteObjectRequest{Flush: true, StateLookup: true},
				data(2*k, body[2*k:]), tc.fin)
			if tc.code != codes.OK {
				if status.Code(err) != tc.code || !strings.Contains(err.Error(), "finish_write 4097 leaves a gap") {
					t.Fatalf("bidi: %v; want %v, a gap", err, tc.code)
				}
				unfinalized(t, srv, cc, "obj", body[:2*k])
				return
			}
			if err != nil {
				t.Fatalf("bidi: %v", err)
			}
			res := out[len(out)-1].GetResource()
			if res.GetSize() != int64(len(body)) || res.GetFinalizeTime() == nil || res.GetChecksums().GetCrc32C() != crc {
				t.Fatalf("last response %v; want the finalized object of %d bytes", out[len(out)-1], len(body))
			}
			sameBytes(t, "object", get(t, cc, "obj"), body)
		})
	}
}
