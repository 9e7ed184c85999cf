package fakes_test

import (
	"os"
	"testing"

	"google.golang.org/grpc"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/internal/wire"
)

// TestRestartOnDisk stops a server on disk (WithDataDir) in the middle of
// each kind of write, starts another on its directory, and finishes the
// write there: resumable sessions keep the bytes they persisted (or their
// object, once finalized), appendable objects their persisted bytes, to
// be taken over or resumed with the write handle.
func TestRestartOnDisk(t *testing.T) {
	body := payload(3*mib+17, 38)
	const half = mib + 5
	for _, tc := range []struct {
		name string
		// before writes through the first server and returns what after
		// needs; after finishes the write through the second and returns
		// the object.
		before func(t *testing.T, cc *grpc.ClientConn) (id string, gen int64, handle []byte)
		after  func(t *testing.T, cc *grpc.ClientConn, id string, gen int64, handle []byte) *wire.Object
	}{
		{
			name: "resumable session, open",
			before: func(t *testing.T, cc *grpc.ClientConn) (string, int64, []byte) {
				id := startResumable(t, cc, spec("resumable"))
				msgs := chunks(body[:half], 512<<10, withUpload(id))
				last := msgs[len(msgs)-1]
				last.FinishWrite, last.ObjectChecksums = false, nil
				resp, err := writeObject(ctxT(t), cc, msgs...)
				if err != nil || resp.GetPersistedSize() != half {
					t.Fatalf("WriteObject: %v, %v; want persisted size %d", resp, err, half)
				}
				return id, 0, nil
			},
			after: func(t *testing.T, cc *grpc.ClientConn, id string, _ int64, _ []byte) *wire.Object {
				st, err := queryWriteStatus(ctxT(t), cc, id)
				if err != nil || st.GetPersistedSize() != half {
					t.Fatalf("QueryWriteStatus after the restart: %v, %v; want persisted size %d", st, err, half)
				}
				// The rest, from the persisted size, with the whole
				// object's checksums.
				msgs := chunks(body[half:], 512<<10, withUpload(id))
				for _, m := range msgs {
					m.WriteOffset += half
				}
				msgs[len(msgs)-1].ObjectChecksums = chunks(body, len(body), nil)[0].ObjectChecksums
				resp, err := writeObject(ctxT(t), cc, msgs...)
				if err != nil {
					t.Fatalf("WriteObject after the restart: %v", err)
				}
				return resp.GetResource()
			},
		},
		{
			name: "resumable session, finalized",
			before: func(t *testing.T, cc *grpc.ClientConn) (string, int64, []byte) {
				id := startResumable(t, cc, spec("finalized"))
				if _, err := writeObject(ctxT(t), cc, chunks(body, 2*mib, withUpload(id))...); err != nil {
					t.Fatal(err)
				}
				return id, 0, nil
			},
			after: func(t *testing.T, cc *grpc.ClientConn, id string, _ int64, _ []byte) *wire.Object {
				st, err := queryWriteStatus(ctxT(t), cc, id)
				if err != nil || st.GetResource() == nil {
					t.Fatalf("QueryWriteStatus after the restart: %v, %v; want the object", st, err)
				}
				return st.GetResource()
			},
		},
		{
			name:   "appendable, taken over",
			before: appendHalf(body[:half], "takeover"),
			after: func(t *testing.T, cc *grpc.ClientConn, _ string, gen int64, _ []byte) *wire.Object {
				return appendRest(t, cc, "takeover", gen, nil, body, half)
			},
		},
		{
			name:   "appendable, resumed with its handle",
			before: appendHalf(body[:half], "handle"),
			after: func(t *testing.T, cc *grpc.ClientConn, _ string, gen int64, h []byte) *wire.Object {
				return appendRest(t, cc, "handle", gen, h, body, half)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := []fakes.Option{fakes.WithBucket(bucket), fakes.WithDataDir(dir)}
			srv, err := fakes.New(opts...)
			if err != nil {
				t.Fatal(err)
			}
			cc := dial(t, srv)
			id, gen, h := tc.before(t, cc)
			cc.Close()
			if err := srv.Close(); err != nil {
				t.Fatal(err)
			}
			srv2, cc2 := start(t, fakes.WithDataDir(dir))
			o := tc.after(t, cc2, id, gen, h)
			if o.GetSize() != int64(len(body)) || o.GetChecksums().GetCrc32C() != crcOf(body) {
				t.Fatalf("object %v; want %d bytes with CRC32C %#x", o, len(body), crcOf(body))
			}
			sameBytes(t, "ReadObject", get(t, cc2, o.GetName()), body)
			got, _ := httpGet(t, srv2, o.GetName())
			sameBytes(t, "JSON read", got, body)
		})
	}
}

// appendHalf returns a before that writes first as the appendable object
// name, flushed, and leaves it unfinalized.
func appendHalf(first []byte, name string) func(t *testing.T, cc *grpc.ClientConn) (string, int64, []byte) {
	return func(t *testing.T, cc *grpc.ClientConn) (string, int64, []byte) {
		a := openAppendStream(t, ctxT(t), cc)
		a.send(creating(name, lookup(data(0, first))))
		r := a.must()
		if r.GetResource().GetSize() != int64(len(first)) && r.GetPersistedSize() != int64(len(first)) {
			t.Fatalf("first response %v; want %d bytes persisted", r, len(first))
		}
		gen, h := r.GetResource().GetGeneration(), handleOf(t, r)
		a.st.CloseSend()
		for {
			if _, err := a.recv(); err != nil {
				break
			}
		}
		return "", gen, h
	}
}

// appendRest appends body[from:] to the appendable object name, with
// write handle h if not nil, and finalizes it.
func appendRest(t *testing.T, cc *grpc.ClientConn, name string, gen int64, h []byte, body []byte, from int64) *wire.Object {
	t.Helper()
	a := openAppendStream(t, ctxT(t), cc)
	a.send(appending(name, gen, h, data(from, body[from:from+mib])))
	a.send(data(from+mib, body[from+mib:]))
	a.send(finish(int64(len(body)), body))
	a.st.CloseSend()
	var o *wire.Object
	for {
		r, err := a.recv()
		if err != nil {
			if o == nil {
				t.Logf("stream: %v", err)
			}
			break
		}
		if r.GetResource().GetFinalizeTime() != nil {
			o = r.GetResource()
		}
	}
	if o == nil {
		t.Fatal("the appendable write did not finalize after the restart")
	}
	return o
}

// TestDataEnv checks where a server keeps its store: in memory by
// default, on disk in the directory WithDataDir names, and with DataEnv
// set, in a temporary directory that Close removes.
func TestDataEnv(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		env     string
		opts    []fakes.Option
		want    string // "" memory, "dir": dir, "tmp": a temporary directory
		removed bool
	}{
		{name: "default", env: "", want: ""},
		{name: "WithDataDir", env: "", opts: []fakes.Option{fakes.WithDataDir(dir)}, want: "dir"},
		{name: "env", env: "1", want: "tmp", removed: true},
		{name: "env and WithDataDir", env: "1", opts: []fakes.Option{fakes.WithDataDir(dir)}, want: "dir"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(fakes.DataEnv, tc.env)
			srv, err := fakes.New(tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			got := fakes.DataDir(srv)
			switch {
			case tc.want == "" && got != "",
				tc.want == "dir" && got != dir,
				tc.want == "tmp" && (got == "" || got == dir):
				t.Errorf("store in %q, want %s", got, tc.want)
			}
			if err := srv.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(got); got != "" && tc.removed != os.IsNotExist(err) {
				t.Errorf("after Close, %s: %v; want removed: %v", got, err, tc.removed)
			}
		})
	}
}
