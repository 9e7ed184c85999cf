package main

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
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/uploader"
)

// objupBin is the command, built once by TestMain.
var objupBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "objup-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	objupBin = filepath.Join(dir, "objup")
	build := exec.Command("go", "build", "-o", objupBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building objup:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const bucket = "cmd-test"

// env is a fake GCS with a versioned bucket, and a journal directory for
// the command.
type env struct {
	srv               *fakes.Server // nil when the fake is a fakegcs process
	grpcAddr, httpURL string
	journal           string
}

// newEnv starts the fake, with opts, and checks for leaked goroutines at
// the end.
func newEnv(t *testing.T, opts ...fakes.Option) *env {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	srv := fakes.NewTest(t, opts...)
	createBucket(t, srv.HTTPURL())
	return &env{srv: srv, grpcAddr: srv.GRPCAddr(), httpURL: srv.HTTPURL(), journal: t.TempDir()}
}

// createBucket creates the test's bucket, with versioning on so that
// every generation written stays listed, through the JSON API at base.
func createBucket(t *testing.T, base string) {
	t.Helper()
	body := fmt.Sprintf(`{"name":%q,"versioning":{"enabled":true}}`, bucket)
	resp, err := http.Post(base+"/storage/v1/b?project=test", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("creating the bucket: %s", resp.Status)
	}
}

// result is what a run of the command did.
type result struct {
	code           int
	stdout, stderr string
}

// command returns the command objup args against e, with the journal's
// directory, the emulator's addresses and the progress lines set.
func (e *env) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, objupBin, append(args, "--journal", e.journal)...)
	cmd.Env = append(os.Environ(),
		"STORAGE_EMULATOR_HOST_GRPC="+e.grpcAddr,
		"STORAGE_EMULATOR_HOST="+e.httpURL)
	return cmd
}

// run runs objup args to its end (at most a minute).
func (e *env) run(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := e.command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("objup %q: %v", args, err)
	}
	return r
}

// version is one stored generation of an object.
type version struct {
	Generation int64
	Size       int64
	CRC32C     uint32
	Live       bool
}

// versions lists every generation of the objects under prefix.
func (e *env) versions(t *testing.T, prefix string) map[string][]version {
	t.Helper()
	out := make(map[string][]version)
	token := ""
	for range 1000 {
		q := url.Values{"versions": {"true"}, "prefix": {prefix}, "maxResults": {"1000"}}
		if token != "" {
			q.Set("pageToken", token)
		}
		resp, err := http.Get(e.httpURL + "/storage/v1/b/" + bucket + "/o?" + q.Encode())
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
			var crc uint32
			if b, err := base64.StdEncoding.DecodeString(it.Crc32c); err == nil && len(b) == 4 {
				crc = uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
			}
			out[it.Name] = append(out[it.Name], version{Generation: g, Size: n, CRC32C: crc, Live: it.TimeDeleted == ""})
		}
		if token = page.NextPageToken; token == "" {
			break
		}
	}
	return out
}

// live returns the names of the live objects under prefix.
func (e *env) live(t *testing.T, prefix string) []string {
	t.Helper()
	var out []string
	for name, vs := range e.versions(t, prefix) {
		for _, v := range vs {
			if v.Live {
				out = append(out, name)
			}
		}
	}
	return out
}

// callCount is how many calls of one method, from one tenant, the fake
// ended.
type callCount struct {
	Method, Tenant string
	Count          int64
}

// callCounts returns the fake's counts of calls: from the server, or from
// a fakegcs process's /_objup/stats.
func (e *env) callCounts(t *testing.T) []callCount {
	t.Helper()
	var out []callCount
	if e.srv != nil {
		for _, c := range e.srv.CallCounts() {
			out = append(out, callCount{c.Method, c.Tenant, c.Count})
		}
		return out
	}
	resp, err := http.Get(e.httpURL + "/_objup/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Calls []callCount }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body.Calls
}

// calls returns the fake's count of calls.
func (e *env) calls(t *testing.T) (n int64) {
	for _, c := range e.callCounts(t) {
		n += c.Count
	}
	return n
}

// writes counts the calls of tenant that write an object.
func (e *env) writes(t *testing.T, tenant string) (n int64) {
	for _, c := range e.callCounts(t) {
		if c.Tenant == tenant && isWrite(c.Method) {
			n += c.Count
		}
	}
	return n
}

// isWrite reports whether a method of the fake writes an object.
func isWrite(method string) bool {
	switch method {
	case "WriteObject", "BidiWriteObject", "StartResumableWrite", "ComposeObject",
		"objects.insert", "objects.compose":
		return true
	}
	return false
}

// mkTree writes files (relative path: size) of random bytes under a new
// directory.
func mkTree(t testing.TB, files map[string]int) string {
	t.Helper()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(len(files)), 11))
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

// checkStored fails t unless each file of dir (relative paths rels) is
// stored as prefix + rel in exactly one generation, with its size and
// CRC32C.
func (e *env) checkStored(t *testing.T, dir, prefix string, rels []string) {
	t.Helper()
	vs := e.versions(t, prefix)
	for _, rel := range rels {
		name := prefix + rel
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		crc := crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))
		v := vs[name]
		switch {
		case len(v) != 1:
			t.Errorf("%s: %d generations %+v, want 1", name, len(v), v)
		case v[0].Size != int64(len(b)) || v[0].CRC32C != crc || !v[0].Live:
			t.Errorf("%s: stored %+v, want size %d crc %08x", name, v[0], len(b), crc)
		}
	}
}

func keys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestCpFile(t *testing.T) {
	e := newEnv(t)
	dir := mkTree(t, map[string]int{"small.txt": 1000, "big.bin": 3 << 20})
	for _, tc := range []struct {
		name, file, dst, object string
	}{
		{"named", "small.txt", "gs://" + bucket + "/f/named", "f/named"},
		{"into prefix", "small.txt", "gs://" + bucket + "/f/dir/", "f/dir/small.txt"},
		{"bucket only", "big.bin", "gs://" + bucket, "big.bin"},
		{"big", "big.bin", "gs://" + bucket + "/f/big", "f/big"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := filepath.Join(dir, tc.file)
			r := e.run(t, "cp", src, tc.dst)
			if r.code != 0 || !strings.Contains(r.stdout, "1 uploaded") {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			r = e.run(t, "cp", src, tc.dst)
			if r.code != 0 || !strings.Contains(r.stdout, "0 uploaded") || !strings.Contains(r.stdout, "1 unchanged") {
				t.Fatalf("second run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			name := tc.object
			vs := e.versions(t, name)
			b, _ := os.ReadFile(src)
			if v := vs[name]; len(v) != 1 || v[0].Size != int64(len(b)) || v[0].CRC32C != crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) {
				t.Errorf("%s: %+v", name, v)
			}
		})
	}
}

func TestCpTree(t *testing.T) {
	for _, api := range []string{"grpc", "http"} {
		t.Run(api, func(t *testing.T) {
			e := newEnv(t)
			files := map[string]int{"a.txt": 10, "d/b.txt": 2000, "d/e/c.bin": 600 << 10, "empty": 0}
			dir := mkTree(t, files)
			args := []string{"cp", "-r", dir, "gs://" + bucket + "/tree", "--progress-every", "10ms"}
			if api == "http" {
				args = append(args, "--http")
			}
			r := e.run(t, args...)
			if r.code != 0 || !strings.Contains(r.stdout, "4 files") || !strings.Contains(r.stdout, "4 uploaded") {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			e.checkStored(t, dir, "tree/", keys(files))
			e.srv.ResetCalls()
			r = e.run(t, args...)
			if r.code != 0 || !strings.Contains(r.stdout, "0 uploaded") || !strings.Contains(r.stdout, "4 unchanged") {
				t.Fatalf("second run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if n := e.writes(t, ""); n != 0 {
				t.Errorf("the second run made %d write calls", n)
			}
			e.checkStored(t, dir, "tree/", keys(files))
		})
	}
}

func TestExitCodes(t *testing.T) {
	e := newEnv(t)
	dir := mkTree(t, map[string]int{"a": 1, "b": 2, "c\nd": 3})
	good := mkTree(t, map[string]int{"x": 1})
	file := filepath.Join(good, "x")
	dst := "gs://" + bucket + "/codes"
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // in stderr or stdout
	}{
		{"no command", nil, exitUsage, "usage"},
		{"unknown command", []string{"mv"}, exitUsage, "unknown command"},
		{"one operand", []string{"cp", file}, exitUsage, "source and a destination"},
		{"directory without -r", []string{"cp", good, dst}, exitUsage, "give -r"},
		{"not gs://", []string{"cp", file, "s3://b/x"}, exitUsage, "want gs://"},
		{"no bucket", []string{"cp", file, "gs:///x"}, exitUsage, "no bucket"},
		{"missing source", []string{"cp", filepath.Join(good, "nope"), dst}, exitUsage, "no such file"},
		{"bad size", []string{"cp", "--parallel-threshold", "12XB", file, dst}, exitUsage, "invalid size"},
		{"bad concurrency", []string{"cp", "--concurrency", "0", file, dst}, exitUsage, "at least 1"},
		{"bad flag", []string{"cp", "--nope", file, dst}, exitUsage, "not defined"},
		{"bad tenant", []string{"cp", "--tenant", "a b", file, dst + "/x"}, exitUsage, "--tenant"},
		{"bad bucket", []string{"cp", file, "gs://UPPER/x"}, exitFailed, "lowercase"},
		{"help", []string{"cp", "-h"}, exitOK, "flags:"},
		{"a file fails", []string{"cp", "-r", "--concurrency", "1", dir, dst + "/stop"}, exitFailed, "line feed"},
		{"continue on error", []string{"cp", "-r", "--continue-on-error", dir, dst + "/cont"}, exitFailed, "2 uploaded"},
		{"ok", []string{"cp", "-r", good, dst + "/ok"}, exitOK, "1 uploaded"},
		{"memory", []string{"cp", "-r", "--memory", "1MiB", "--concurrency", "4", good, dst + "/mem"}, exitOK, "1 uploaded"},
		{"bad memory", []string{"cp", "--memory", "1000", file, dst + "/mem2"}, exitUsage, "--memory"},
		{"flags after operands", []string{"cp", good, dst + "/late", "-r", "--concurrency", "2"}, exitOK, "1 uploaded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.run(t, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stdout+r.stderr, tc.want) {
				t.Errorf("exit %d, want %d with %q\nstdout: %s\nstderr: %s", r.code, tc.code, tc.want, r.stdout, r.stderr)
			}
		})
	}
}

func TestNoClobberAndTenant(t *testing.T) {
	e := newEnv(t)
	dir := mkTree(t, map[string]int{"a": 10, "b": 10})
	if _, err := e.srv.PutObject(fakes.Object{ObjectAttrs: fakes.ObjectAttrs{Bucket: bucket, Name: "nc/a"}, Content: []byte("theirs")}); err != nil {
		t.Fatal(err)
	}
	r := e.run(t, "cp", "-r", "-n", "--tenant", "team-7", dir, "gs://"+bucket+"/nc")
	if r.code != 0 || !strings.Contains(r.stdout, "1 uploaded") || !strings.Contains(r.stdout, "1 existing") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if o, _ := e.srv.Object(bucket, "nc/a"); string(o.Content) != "theirs" {
		t.Error("--no-clobber overwrote nc/a")
	}
	o, err := e.srv.Object(bucket, "nc/b")
	if err != nil || o.Tenant != "team-7" {
		t.Errorf("nc/b: tenant %q, %v; want team-7", o.Tenant, err)
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"0", 0, false},
		{"1048576", 1 << 20, false},
		{"64MiB", 64 << 20, false},
		{"64mib", 64 << 20, false},
		{"1GiB", 1 << 30, false},
		{"500MB", 500e6, false},
		{"2KB", 2000, false},
		{"4k", 4096, false},
		{"1.5GiB", 3 << 29, false},
		{"10 MiB", 10 << 20, false},
		{"7B", 7, false},
		{"2TiB", 2 << 40, false},
		{"", 0, true},
		{"MiB", 0, true},
		{"-1", 0, true},
		{"-1MiB", 0, true},
		{"12XB", 0, true},
		{"1e30GiB", 0, true},
		{"9223372036854775807KiB", 0, true},
		{"NaN", 0, true},
	} {
		got, err := parseSize(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("parseSize(%q) = %d, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestParseCp(t *testing.T) {
	var discard bytes.Buffer
	cfg, err := parseCp([]string{"-r", "src", "--concurrency", "3", "gs://b/p", "--checksum", "--parallel-threshold=64MiB", "--exclude", "*.tmp", "--exclude", "skip", "--parallel-method", "compose"}, &discard)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.recursive || cfg.src != "src" || cfg.dst != "gs://b/p" || cfg.concurrency != 3 || !cfg.checksum ||
		cfg.threshold != 64<<20 || len(cfg.excludes) != 2 || parallelMethods[cfg.method] != uploader.ViaCompose {
		t.Errorf("parsed %+v", cfg)
	}
	cfg, err = parseCp([]string{"-n", "--", "-file", "gs://b/x"}, &discard)
	if err != nil || cfg.src != "-file" || !cfg.noClobber {
		t.Errorf("after --: %+v, %v", cfg, err)
	}
	for _, args := range [][]string{
		{"a"}, {"a", "b", "c"}, {"--exclude", "[", "a", "b"}, {"--concurrency", "-2", "a", "b"},
		{"--parallel-method", "xml", "a", "b"},
	} {
		if _, err := parseCp(args, &discard); err == nil {
			t.Errorf("parseCp(%q): no error", args)
		}
	}
	for in, want := range map[string][2]string{
		"gs://b":        {"b", ""},
		"gs://b/":       {"b", ""},
		"gs://b/p/q":    {"b", "p/q"},
		"gs://b/p/dir/": {"b", "p/dir/"},
	} {
		b, n, err := parseURL(in)
		if err != nil || b != want[0] || n != want[1] {
			t.Errorf("parseURL(%q) = %q, %q, %v", in, b, n, err)
		}
	}
}

func TestMemoryBudget(t *testing.T) {
	e := newEnv(t)
	files := map[string]int{"r1": 3 << 20, "r2": 3<<20 + 17, "par": 5 << 20}
	for i := range 20 {
		files[fmt.Sprintf("s/%02d", i)] = 1000 * i
	}
	dir := mkTree(t, files)
	r := e.run(t, "cp", "-r", "--memory", "2MiB", "--parallel-threshold", "4MiB", "--part-size", "1MiB", dir, "gs://"+bucket+"/mem")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	e.checkStored(t, dir, "mem/", keys(files))
}
