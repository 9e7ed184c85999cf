package mode

import (
	"testing"

	"github.com/objup/objup/uploader/internal/xfer"
)

// TestMultipartLostCompleteAndAbort: a complete whose answers were all
// lost is settled by an abort; when the abort's own first attempt is lost
// too and its retry finds no upload, either the complete or the abort
// ended it. The live object tells: the upload returns it when it holds
// what was written, and otherwise fails with an unknown outcome, never
// with a known failure while the object is stored.
func TestMultipartLostCompleteAndAbort(t *testing.T) {
	tests := []struct {
		name   string
		script map[string][]answer
		stored bool // the service stores the object
	}{
		{
			name: "the lost complete completed",
			script: map[string][]answer{
				"complete upload-1": {ansLost, ansDropped},
				"abort upload-1":    {ansDropped, ansThrough},
			},
			stored: true,
		},
		{
			name: "the lost abort aborted",
			script: map[string][]answer{
				"complete upload-1": {ansLost, ansDropped},
				"abort upload-1":    {ansLost, ansThrough},
			},
			stored: true, // the first complete went through before the abort
		},
		{
			name: "nothing reached the service but the abort",
			script: map[string][]answer{
				"complete upload-1": {ansDropped, ansDropped, ansDropped, ansDropped},
				"abort upload-1":    {ansLost, ansThrough},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newFakeGCS()
			g.fault = scripted(tt.script)
			data := payloadOf(MinMultipartPart + 1)
			r := runParallel(t, g, mpChunk, Parallel{XML: g, PartSize: MinMultipartPart}, data, nil)
			stored := g.object("o")
			if (stored != nil) != tt.stored {
				t.Fatalf("stored %v, want %v (calls %q)", stored != nil, tt.stored, g.callsOf("complete", "abort"))
			}
			switch {
			case stored != nil && r.err != nil:
				t.Fatalf("the object was stored (generation %d), and the upload failed: %v (calls %q)", stored.gen, r.err, g.callsOf("complete", "abort"))
			case stored != nil && r.o.GetGeneration() != stored.gen:
				t.Fatalf("the upload returned generation %d, the service stored %d", r.o.GetGeneration(), stored.gen)
			case stored == nil && r.err == nil:
				t.Fatalf("nothing was stored, and the upload returned %v", r.o)
			case stored == nil && !xfer.Unknown(r.err):
				// Nothing of the upload is live, but a credential that
				// may not read cannot tell: the outcome is unknown.
				t.Fatalf("the upload failed with a known failure (%v); after a lost complete and a lost abort it cannot know", r.err)
			}
		})
	}
}
