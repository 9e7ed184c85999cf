package tree_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/objup/objup/cmd/objup/tree"
	"github.com/objup/objup/fakes"
	"github.com/objup/objup/uploader"
)

const bucket = "tree-test"

// env is a fake GCS with a versioned bucket (so that every generation
// written stays listed), a client of it and a journal.
type env struct {
	srv     *fakes.Server
	c       *uploader.Client
	journal *uploader.Journal
	jdir    string
}

// newEnv starts the fake and checks for leaked goroutines at the end.
func newEnv(t *testing.T) *env {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	srv := fakes.NewTest(t)
	createVersioned(t, srv.HTTPURL(), bucket)
	c, err := uploader.NewClient(context.Background(),
		option.WithEndpoint(srv.GRPCAddr()),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	jdir := t.TempDir()
	j, err := uploader.OpenJournal(jdir)
	if err != nil {
		t.Fatal(err)
	}
	return &env{srv: srv, c: c, journal: j, jdir: jdir}
}

// createVersioned creates a bucket with versioning on through the JSON
// API at base.
func createVersioned(t testing.TB, base, name string) {
	t.Helper()
	body := fmt.Sprintf(`{"name":%q,"versioning":{"enabled":true}}`, name)
	resp, err := http.Post(base+"/storage/v1/b?project=test", "application/json", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("creating bucket %s: %s", name, resp.Status)
	}
}

// version is one stored generation of an object.
type version struct {
	Generation int64
	Size       int64
	CRC32C     uint32
	Live       bool
}

// versions lists every generation of the objects under prefix in bucket,
// through the JSON API at base.
func versions(t testing.TB, base, bucket, prefix string) map[string][]version {
	t.Helper()
	out := make(map[string][]version)
	token := ""
	for range 1000 {
		q := url.Values{"versions": {"true"}, "prefix": {prefix}, "maxResults": {"1000"}}
		if token != "" {
			q.Set("pageToken", token)
		}
		resp, err := http.Get(base + "/storage/v1/b/" + bucket + "/o?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Items []struct {
				Name, Generation, Size, Crc32c, TimeDeleted string
			}
			NextPageToken string
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			g, _ := strconv.ParseInt(it.Generation, 10, 64)
			n, _ := strconv.ParseInt(it.Size, 10, 64)
			out[it.Name] = append(out[it.Name], version{Generation: g, Size: n, CRC32C: decodeCRC(it.Crc32c), Live: it.TimeDeleted == ""})
		}
		if token = page.NextPageToken; token == "" {
			break
		}
	}
	return out
}

// decodeCRC decodes the JSON API's base64 big-endian CRC32C.
func decodeCRC(s string) uint32 {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) != 4 {
		return 0
	}
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// mkTree writes files (relative path: size) under a new directory, with
// random content, and returns it.
func mkTree(t testing.TB, files map[string]int) string {
	t.Helper()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(len(files)), 7))
	for rel, size := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// crcOf returns the CRC32C of the file at path.
func crcOf(t testing.TB, path string) (uint32, int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)), int64(len(b))
}

// events records the events of an upload.
type events struct {
	mu sync.Mutex
	ev []tree.Event
}

func (e *events) on(ev tree.Event) {
	e.mu.Lock()
	e.ev = append(e.ev, ev)
	e.mu.Unlock()
}

// of returns the paths of the events of kind k, sorted.
func (e *events) of(k tree.EventKind) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.ev {
		if ev.Kind == k {
			out = append(out, ev.Path)
		}
	}
	slices.Sort(out)
	return out
}

// writes counts the calls that write an object, per method, since the
// last ResetCalls.
func writes(srv *fakes.Server) int64 {
	var n int64
	for _, c := range srv.CallCounts() {
		switch c.Method {
		case "WriteObject", "BidiWriteObject", "StartResumableWrite", "ComposeObject":
			n += c.Count
		}
	}
	return n
}

// checkOneGeneration fails t if an object under prefix has more than one
// generation, or is not the file of dir it is named after.
func checkOneGeneration(t *testing.T, srv *fakes.Server, dir, prefix string, rels []string) {
	t.Helper()
	vs := versions(t, srv.HTTPURL(), bucket, prefix)
	for _, rel := range rels {
		name := tree.ObjectName(prefix, rel)
		v := vs[name]
		if len(v) != 1 {
			t.Errorf("%s: %d generations %+v, want 1", name, len(v), v)
			continue
		}
		crc, size := crcOf(t, filepath.Join(dir, filepath.FromSlash(rel)))
		if v[0].Size != size || v[0].CRC32C != crc {
			t.Errorf("%s: size %d crc %08x, want %d %08x", name, v[0].Size, v[0].CRC32C, size, crc)
		}
	}
}
