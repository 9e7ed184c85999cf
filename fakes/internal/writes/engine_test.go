package writes

import (
	"hash/crc32"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/internal/wire"
)

// testUpload is a writes.Upload that keeps nothing but the State.
type testUpload struct {
	sync.Mutex
	State
	id      string
	app     *Appendable
	result  *wire.Object
	gone    bool
	dropped bool
}

func (u *testUpload) Written() *State            { return &u.State }
func (u *testUpload) Session() string            { return u.id }
func (u *testUpload) Appending() *Appendable     { return u.app }
func (u *testUpload) Done() (*wire.Object, bool) { return u.result, u.gone }
func (u *testUpload) Drop()                      { u.dropped, u.gone = true, u.id != "" }
func (u *testUpload) commit([]byte) (*wire.Object, error) {
	u.result = &wire.Object{Name: "o", Size: u.Size}
	return u.result, nil
}

// testStream is a writes.Stream that opens up and counts the bytes.
type testStream struct{ up *testUpload }

func (s *testStream) NewUpload(*api.WriteMsg) (Upload, error) { return s.up, nil }
func (s *testStream) Resume(id string) (Upload, error) {
	if id != s.up.id {
		return nil, status.Error(codes.NotFound, "no such session")
	}
	return s.up, nil
}
func (s *testStream) OpenAppendable(*api.WriteMsg) (Upload, error) {
	s.up.app = &Appendable{Name: "o", Gen: 1, Epoch: 1, Writer: s}
	return s.up, nil
}
func (s *testStream) OpenAppend(m *api.WriteMsg) (Upload, error) { return s.OpenAppendable(m) }
func (s *testStream) Epoch() uint64                              { return 1 }
func (s *testStream) Check(*api.WriteMsg) error                  { return nil }
func (s *testStream) Checked() error                             { return nil }
func (s *testStream) Accept(m *api.WriteMsg) error {
	p := m.Data.GetContent()
	if err := s.up.CheckMessage(m.Offset, int64(len(p)), s.up.app != nil); err != nil {
		return err
	}
	s.up.Add(int64(len(p)), crc32.Checksum(p, crc32c.Table))
	return nil
}
func (s *testStream) Persist() error { s.up.app.Persist(&s.up.State); return nil }
func (s *testStream) Finalize() (*wire.Object, error) {
	return Finalize(s.up, nil, s.up.commit)
}
func (s *testStream) FinalizeAppendable() (*wire.Object, error) { return s.up.commit(nil) }

func data(offset int64, p string) api.WriteMsg {
	return api.WriteMsg{Offset: offset, Data: &wire.ChecksummedData{Content: []byte(p)}}
}

// TestEngine runs a stream's messages through the engine and checks the
// answer to the last one, or to the half-close.
func TestEngine(t *testing.T) {
	spec := &wire.WriteObjectSpec{Resource: &wire.Object{Name: "o"}}
	first := func(m api.WriteMsg) api.WriteMsg { m.First, m.Spec = true, spec; return m }
	session := func(m api.WriteMsg) api.WriteMsg { m.First, m.UploadID = true, "s1"; return m }
	finish := func(m api.WriteMsg) api.WriteMsg { m.Finish = true; return m }
	badCRC := uint32(1)
	for _, tc := range []struct {
		name     string
		up       *testUpload
		bidi     bool
		msgs     []api.WriteMsg
		end      bool // half-close after msgs
		code     codes.Code
		size     int64
		finished bool // the answer carries the object
		dropped  bool
	}{
		{name: "one-shot", msgs: []api.WriteMsg{first(data(0, "ab")), finish(data(2, "cd"))}, size: 4, finished: true},
		{name: "no first message", msgs: []api.WriteMsg{data(0, "ab")}, code: codes.InvalidArgument},
		{name: "a late first message", msgs: []api.WriteMsg{first(data(0, "ab")), first(data(2, "cd"))}, code: codes.InvalidArgument},
		{name: "a gap", msgs: []api.WriteMsg{first(data(0, "ab")), data(3, "cd")}, code: codes.InvalidArgument},
		{name: "finish at the wrong offset", msgs: []api.WriteMsg{first(data(0, "ab")), finish(api.WriteMsg{Offset: 1})}, code: codes.InvalidArgument},
		{name: "one-shot without finish", msgs: []api.WriteMsg{first(data(0, "ab"))}, end: true, code: codes.InvalidArgument},
		{name: "closed before its first message", end: true, code: codes.InvalidArgument},
		{name: "appendable on WriteObject", msgs: []api.WriteMsg{{First: true, Spec: &wire.WriteObjectSpec{Resource: spec.Resource, Appendable: new(true)}}}, code: codes.InvalidArgument},
		{name: "session resumed", up: &testUpload{id: "s1", State: State{Size: 2}}, msgs: []api.WriteMsg{session(data(2, "cd"))}, end: true, size: 4},
		{name: "unknown session", up: &testUpload{id: "s2"}, msgs: []api.WriteMsg{session(data(0, "ab"))}, code: codes.NotFound},
		{name: "session gone", up: &testUpload{id: "s1", gone: true}, msgs: []api.WriteMsg{session(data(0, "ab"))}, code: codes.NotFound},
		{name: "session finalized: retried finish", up: &testUpload{id: "s1", State: State{Size: 4}, result: &wire.Object{Name: "o"}}, msgs: []api.WriteMsg{session(finish(api.WriteMsg{Offset: 4}))}, size: 4, finished: true},
		{name: "session finalized: more data gets the object", up: &testUpload{id: "s1", State: State{Size: 4}, result: &wire.Object{Name: "o"}}, msgs: []api.WriteMsg{session(data(4, "e"))}, size: 4, finished: true},
		{name: "session finalized: state lookup", up: &testUpload{id: "s1", State: State{Size: 4}, result: &wire.Object{Name: "o"}}, msgs: []api.WriteMsg{{First: true, UploadID: "s1", Lookup: true}}, size: 4, finished: true},
		{name: "checksum mismatch drops the session", up: &testUpload{id: "s1"}, msgs: []api.WriteMsg{session(api.WriteMsg{Sums: &wire.ObjectChecksums{Crc32C: &badCRC}}), finish(data(0, "ab"))}, code: codes.DataLoss, dropped: true},
		{name: "size mismatch keeps the session", up: &testUpload{id: "s1", State: State{Limit: new(int64(3))}}, msgs: []api.WriteMsg{session(finish(data(0, "ab")))}, code: codes.InvalidArgument},
		{name: "appendable: a clean half-close persists", bidi: true, msgs: []api.WriteMsg{{First: true, Spec: &wire.WriteObjectSpec{Resource: spec.Resource, Appendable: new(true)}}, data(0, "ab")}, end: true, size: 2},
		{name: "appendable: finish_write without an offset", bidi: true, msgs: []api.WriteMsg{{First: true, Spec: &wire.WriteObjectSpec{Resource: spec.Resource, Appendable: new(true)}}, data(0, "ab"), finish(api.WriteMsg{})}, size: 2, finished: true},
		{name: "appendable: finish_write past the end", bidi: true, msgs: []api.WriteMsg{{First: true, Spec: &wire.WriteObjectSpec{Resource: spec.Resource, Appendable: new(true)}}, data(0, "ab"), finish(api.WriteMsg{Offset: 3})}, code: codes.InvalidArgument},
		{name: "one-shot: finish_write before the end", msgs: []api.WriteMsg{first(data(0, "ab")), finish(api.WriteMsg{})}, code: codes.InvalidArgument},
		{name: "appendable: sums without finish", bidi: true, msgs: []api.WriteMsg{{First: true, Spec: &wire.WriteObjectSpec{Resource: spec.Resource, Appendable: new(true)}}, {Sums: &wire.ObjectChecksums{}}}, code: codes.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := tc.up
			if up == nil {
				up = &testUpload{}
			}
			st := &testStream{up: up}
			e := &Engine{Stream: st, Bidi: tc.bidi}
			var (
				obj  *wire.Object
				size int64
				err  error
			)
			for i := range tc.msgs {
				m := tc.msgs[i]
				p := m.Data.GetContent()
				if obj, size, err = e.Handle(&m, int64(len(p)), m.Data != nil); err != nil {
					break
				}
			}
			if err == nil && tc.end {
				obj, size, err = e.End()
			}
			if status.Code(err) != tc.code {
				t.Fatalf("got %v, want code %v", err, tc.code)
			}
			if err == nil && (size != tc.size || (obj != nil) != tc.finished) {
				t.Fatalf("got object %v, size %d; want finished %v, size %d", obj, size, tc.finished, tc.size)
			}
			if up.dropped != tc.dropped {
				t.Fatalf("dropped %v, want %v", up.dropped, tc.dropped)
			}
			if tc.end && tc.bidi && err == nil && up.app.Persisted != tc.size {
				t.Fatalf("persisted %d, want %d", up.app.Persisted, tc.size)
			}
		})
	}
}

// TestQuery checks QueryWriteStatus's answers for a session.
func TestQuery(t *testing.T) {
	for _, tc := range []struct {
		name string
		up   *testUpload
		code codes.Code
		want int64 // persisted size; -1 for the object
	}{
		{"open", &testUpload{id: "s", State: State{Size: 5}}, codes.OK, 5},
		{"finalized", &testUpload{id: "s", State: State{Size: 5}, result: &wire.Object{Name: "o"}}, codes.OK, -1},
		{"gone", &testUpload{id: "s", gone: true}, codes.NotFound, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := Query(tc.up)
			if status.Code(err) != tc.code {
				t.Fatalf("Query: %v, want %v", err, tc.code)
			}
			if err == nil && (tc.want < 0) != (resp.GetResource() != nil) || err == nil && tc.want >= 0 && resp.GetPersistedSize() != tc.want {
				t.Fatalf("Query: %v, want %d", resp, tc.want)
			}
		})
	}
}

// TestCheckSpec checks a write's spec, and that the bucket is known once
// it parsed.
func TestCheckSpec(t *testing.T) {
	obj := func(bucket, name string) *wire.Object { return &wire.Object{Bucket: bucket, Name: name} }
	for _, tc := range []struct {
		name   string
		spec   *wire.WriteObjectSpec
		common *wire.CommonObjectRequestParams
		bucket string
		code   codes.Code
	}{
		{"good", &wire.WriteObjectSpec{Resource: obj("projects/_/buckets/b", "o")}, nil, "b", codes.OK},
		{"no resource", &wire.WriteObjectSpec{}, nil, "", codes.InvalidArgument},
		{"bad bucket", &wire.WriteObjectSpec{Resource: obj("b", "o")}, nil, "", codes.InvalidArgument},
		{"no object name", &wire.WriteObjectSpec{Resource: obj("projects/_/buckets/b", "")}, nil, "b", codes.InvalidArgument},
		{"negative size", &wire.WriteObjectSpec{Resource: obj("projects/_/buckets/b", "o"), ObjectSize: new(int64(-1))}, nil, "b", codes.InvalidArgument},
		{"encryption key", &wire.WriteObjectSpec{Resource: obj("projects/_/buckets/b", "o")}, &wire.CommonObjectRequestParams{EncryptionAlgorithm: "AES256"}, "b", codes.Unimplemented},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bucket, err := CheckSpec(tc.spec, tc.common)
			if bucket != tc.bucket || status.Code(err) != tc.code {
				t.Fatalf("CheckSpec: %q, %v; want %q, code %v", bucket, err, tc.bucket, tc.code)
			}
		})
	}
}
