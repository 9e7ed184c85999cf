package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"

	"github.com/objup/objup/fakes"
)

// hermetic clears the emulator variable so that the run targets the
// embedded fake (or the test's own), and checks for leaked goroutines when
// the test ends: run must leave nothing behind.
func hermetic(t *testing.T) {
	t.Helper()
	t.Setenv("STORAGE_EMULATOR_HOST_GRPC", "")
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// runMain runs the program in process.
func runMain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// runJSON runs the program with -json -quiet, checks its exit status and
// decodes its summary.
func runJSON(t *testing.T, wantCode int, args ...string) *summary {
	t.Helper()
	code, out, errOut := runMain(t, append([]string{"-json", "-quiet"}, args...)...)
	if code != wantCode {
		t.Fatalf("exit status %d, want %d\nstdout: %s\nstderr: %s", code, wantCode, out, errOut)
	}
	var s summary
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("decoding the summary: %v\n%s", err, out)
	}
	if dec.More() {
		t.Fatalf("more than one JSON value on stdout:\n%s", out)
	}
	return &s
}

// wantAllVerified checks a run where every one of n objects uploaded and
// verified through the JSON API.
func wantAllVerified(t *testing.T, s *summary, n int) {
	t.Helper()
	if !s.OK || s.Objects != n || s.Uploaded != n || s.Failed != 0 || s.ErrorCount != 0 || len(s.Errors) != 0 {
		t.Errorf("ok %v, objects %d, uploaded %d, failed %d, errors %d %v; want %d uploaded, none failed",
			s.OK, s.Objects, s.Uploaded, s.Failed, s.ErrorCount, s.Errors, n)
	}
	v := s.Verify
	if v.Method != verifyJSONAPI || !v.Passed || v.Expected != n || v.Listed != n || v.Verified != n ||
		v.Missing != 0 || v.Mismatched != 0 || v.Unexpected != 0 || v.Note != "" || len(v.Problems) != 0 {
		t.Errorf("verification %+v; want all %d listed and verified through the JSON API", v, n)
	}
	if n > 0 && (s.ObjectsPerSecond <= 0 || s.LatencyMS.P50 <= 0 || s.LatencyMS.P50 > s.LatencyMS.P95 ||
		s.LatencyMS.P95 > s.LatencyMS.P99 || s.LatencyMS.P99 > s.LatencyMS.Max || s.Memory.AllocBytes == 0) {
		t.Errorf("figures look wrong: %.0f objects/s, latency %+v, memory %+v", s.ObjectsPerSecond, s.LatencyMS, s.Memory)
	}
	if s.Pool.InUseBytes != 0 || s.Pool.Rejected != 0 || s.Pool.Gets != s.Pool.Puts {
		t.Errorf("pool %+v: every buffer must be back, none rejected", s.Pool)
	}
}

func TestGenerated(t *testing.T) {
	tests := []struct {
		name string
		args []string
		n    int
		// check inspects what is particular to the case.
		check func(t *testing.T, s *summary)
	}{
		{
			name: "defaults",
			args: []string{"-n", "200"},
			n:    200,
			check: func(t *testing.T, s *summary) {
				if s.Target != "embedded-fake" || s.Bucket != defaultBucket || s.Prefix != defaultPrefix ||
					s.Concurrency != defaultConcurrency || s.Buffers != "pool" || s.Source != "generated" {
					t.Errorf("settings %+v", s)
				}
				if len(s.PaceByTenth) != 10 || slices.Min(s.PaceByTenth) <= 0 || s.PaceRatio <= 0 {
					t.Errorf("pace %v, last/first %v; want 10 rates", s.PaceByTenth, s.PaceRatio)
				}
				// Sizes spread over 1-64 KiB: one pooled chunk each.
				if s.Bytes < 200*1024 || s.Bytes > 200*64*1024 || s.Pool.Gets != 200 {
					t.Errorf("%d bytes, %d pool gets for 200 objects of 1-64 KiB", s.Bytes, s.Pool.Gets)
				}
			},
		},
		{
			name: "caller buffers",
			args: []string{"-n", "200", "-buffers", "caller", "-concurrency", "4", "-max-size", "10000"},
			n:    200,
			check: func(t *testing.T, s *summary) {
				if s.Buffers != "caller" || s.CallerBuffers != 4 || s.CallerBufferBytes != 12288 {
					t.Errorf("buffers %s: %d of %d bytes; want 4 caller buffers of 12288 (10000 rounded up to 4 KiB)",
						s.Buffers, s.CallerBuffers, s.CallerBufferBytes)
				}
				if s.Pool.Gets != 0 {
					t.Errorf("%d gets from the client's pool; caller buffers need none", s.Pool.Gets)
				}
			},
		},
		{
			name: "tenant",
			args: []string{"-n", "50", "-tenant", "acme-42"},
			n:    50,
			check: func(t *testing.T, s *summary) {
				// One WriteObject per small object, each with the tenant.
				if tc := s.TenantCalls; s.Tenant != "acme-42" || tc == nil || tc.Total != 50 || tc.WithTenant != 50 {
					t.Errorf("tenant %q, calls %+v; want all 50 calls with the tenant", s.Tenant, tc)
				}
			},
		},
		{
			name: "empty objects",
			args: []string{"-n", "20", "-min-size", "0", "-max-size", "0", "-concurrency", "1"},
			n:    20,
			check: func(t *testing.T, s *summary) {
				if s.Bytes != 0 {
					t.Errorf("%d bytes; want 0", s.Bytes)
				}
			},
		},
		{
			// Objects above one 256 KiB chunk take the resumable path.
			name: "resumable sizes",
			args: []string{"-n", "6", "-min-size", "200KiB", "-max-size", "700KiB", "-concurrency", "3", "-seed", "7"},
			n:    6,
		},
		{
			name: "resumable sizes with caller buffers",
			args: []string{"-n", "6", "-min-size", "200KiB", "-max-size", "700KiB", "-concurrency", "3", "-seed", "7", "-buffers", "caller"},
			n:    6,
			check: func(t *testing.T, s *summary) {
				if s.CallerBufferBytes != 1<<20 {
					t.Errorf("caller buffers of %d bytes; want 1 MiB (four chunk slots) above 256 KiB", s.CallerBufferBytes)
				}
			},
		},
		{
			name: "none",
			args: []string{"-n", "0"},
			n:    0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hermetic(t)
			s := runJSON(t, 0, tt.args...)
			wantAllVerified(t, s, tt.n)
			if tt.check != nil {
				tt.check(t, s)
			}
		})
	}
}

// TestDeterministic checks that a seed gives the same objects every time and
// another seed different ones.
func TestDeterministic(t *testing.T) {
	sum := func(seed uint64) (int64, []uint32) {
		b := generate(30, 1, 5000, seed, "p/")
		var crcs []uint32
		var total int64
		for i, it := range b.items {
			rc, err := it.Open()
			if err != nil {
				t.Fatal(err)
			}
			// Odd read sizes must not change the bytes.
			buf := make([]byte, 1+i%13)
			for {
				if _, err := rc.Read(buf); err != nil {
					break
				}
			}
			rc.Close()
			if !b.objects[i].complete {
				t.Fatalf("object %d not read to the end", i)
			}
			total += b.objects[i].read
			crcs = append(crcs, b.objects[i].crc)
		}
		return total, crcs
	}
	n1, c1 := sum(1)
	n2, c2 := sum(1)
	n3, c3 := sum(2)
	if n1 != n2 || !slices.Equal(c1, c2) {
		t.Errorf("seed 1 gave %d bytes, then %d, or different contents", n1, n2)
	}
	if n1 == n3 && slices.Equal(c1, c3) {
		t.Errorf("seeds 1 and 2 gave the same objects")
	}
}

// tree builds a directory to upload and returns it with the object names
// (relative paths) of its readable files.
func tree(t *testing.T) (string, []string) {
	t.Helper()
	root := t.TempDir()
	files := map[string]int{
		"a.txt":                3,
		"empty":                0,
		"sub/b.bin":            70 << 10,
		"sub/deeper/c.log":     1 << 10,
		"sub/deeper/large.bin": 300 << 10, // above one 256 KiB chunk
		"with space/d e.txt":   100,
	}
	var names []string
	for name, size := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		data := bytes.Repeat([]byte(name), size/len(name)+1)[:size]
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	// A link to a file is uploaded with the file's content.
	if err := os.Symlink("a.txt", filepath.Join(root, "link-to-a")); err != nil {
		t.Fatal(err)
	}
	names = append(names, "link-to-a")
	// A link to a directory and a named pipe are skipped (opening the pipe
	// would block).
	if err := os.Symlink("sub", filepath.Join(root, "link-to-sub")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return root, names
}

func TestDir(t *testing.T) {
	for _, buffers := range []string{"pool", "caller"} {
		t.Run(buffers, func(t *testing.T) {
			hermetic(t)
			root, names := tree(t)
			// A file that is listed but cannot be opened: a link whose
			// target is gone, as a file removed after the listing.
			if err := os.Symlink("gone", filepath.Join(root, "sub", "dangling")); err != nil {
				t.Fatal(err)
			}
			s := runJSON(t, 1, "-dir", root, "-prefix", "up/", "-buffers", buffers)

			if s.OK || s.Source != "dir" || s.Objects != len(names)+1 || s.Uploaded != len(names) ||
				s.Failed != 1 || s.ErrorCount != 1 || s.Skipped != 2 {
				t.Errorf("ok %v, source %s, objects %d, uploaded %d, failed %d, errors %d, skipped %d; want %d objects, %d uploaded, 1 failed, 2 skipped",
					s.OK, s.Source, s.Objects, s.Uploaded, s.Failed, s.ErrorCount, s.Skipped, len(names)+1, len(names))
			}
			if len(s.Errors) != 1 || s.Errors[0].Name != "up/sub/dangling" || !strings.Contains(s.Errors[0].Error, "no such file") {
				t.Errorf("errors %+v; want the dangling link, not found", s.Errors)
			}
			// Everything else is there, under its relative name.
			v := s.Verify
			if !v.Passed || v.Verified != len(names) || v.Listed != len(names) || v.Unexpected != 0 {
				t.Errorf("verification %+v; want the %d readable files verified", v, len(names))
			}
			if buffers == "caller" && s.CallerBufferBytes != 1<<20 {
				t.Errorf("caller buffers of %d bytes with a 300 KiB file; want 1 MiB", s.CallerBufferBytes)
			}
		})
	}
}

// TestDirNames checks the object names of a -dir upload.
func TestDirNames(t *testing.T) {
	root, names := tree(t)
	b, err := walk(root, "x/")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range b.items {
		got = append(got, strings.TrimPrefix(it.Name, "x/"))
	}
	if !slices.Equal(got, names) {
		t.Errorf("names %q; want %q", got, names)
	}
	if len(b.skipped) != 2 || len(b.problems) != 0 {
		t.Errorf("skipped %q, problems %v; want the directory link and the pipe skipped", b.skipped, b.problems)
	}
}

// TestEmulator runs against a server started apart, as an external emulator:
// with -endpoint and -http-endpoint the program creates the bucket and lists
// it; through the environment variable alone it can only check the upload
// responses.
func TestEmulator(t *testing.T) {
	hermetic(t)
	srv := fakes.NewTest(t)

	s := runJSON(t, 0, "-n", "40", "-endpoint", srv.GRPCAddr(), "-http-endpoint", srv.HTTPURL()+"/", "-bucket", "fresh-bucket")
	wantAllVerified(t, s, 40)
	if s.Target != "emulator" || s.Endpoint != srv.GRPCAddr() || !strings.HasPrefix(s.Prefix, defaultPrefix) || s.Prefix == defaultPrefix {
		t.Errorf("target %s at %s, prefix %q; want the emulator and a fresh prefix under %s", s.Target, s.Endpoint, s.Prefix, defaultPrefix)
	}
	if !strings.Contains(s.Memory.Scope, "client") || strings.Contains(s.Memory.Scope, "fake") {
		t.Errorf("memory scope %q; want the client's alone", s.Memory.Scope)
	}

	// Without -http-endpoint nothing creates the bucket: every upload
	// fails, with a hint.
	s = runJSON(t, 1, "-n", "3", "-endpoint", srv.GRPCAddr(), "-bucket", "missing-bucket")
	if s.OK || s.Failed != 3 || !strings.Contains(s.Hint, "does not exist on the emulator") {
		t.Errorf("ok %v, failed %d, hint %q; want 3 failures and a hint about the bucket", s.OK, s.Failed, s.Hint)
	}

	t.Setenv("STORAGE_EMULATOR_HOST_GRPC", srv.GRPCAddr())
	s = runJSON(t, 0, "-n", "30", "-bucket", "fresh-bucket", "-prefix", "env/")
	if !s.OK || s.Uploaded != 30 || s.Verify.Method != verifyResponses || !s.Verify.Passed || s.Verify.Verified != 30 ||
		!strings.Contains(s.Verify.Note, "-http-endpoint") {
		t.Errorf("ok %v, uploaded %d, verification %+v; want 30 checked against the responses, with a note", s.OK, s.Uploaded, s.Verify)
	}
}

// TestFailures makes some uploads fail: they are reported, the exit status
// is 1, and the verification finds exactly the others (a failed upload
// leaves nothing).
func TestFailures(t *testing.T) {
	hermetic(t)
	srv := fakes.NewTest(t, fakes.WithBucket(defaultBucket))
	for _, nth := range []int{3, 10, 25} {
		srv.FailCall(fakes.MethodWriteObject, nth, codes.PermissionDenied)
	}
	s := runJSON(t, 1, "-n", "40", "-concurrency", "4", "-endpoint", srv.GRPCAddr(), "-http-endpoint", srv.HTTPURL())
	if s.OK || s.Uploaded != 37 || s.Failed != 3 || s.ErrorCount != 3 || len(s.Errors) != 3 {
		t.Errorf("ok %v, uploaded %d, failed %d, errors %v; want 3 of 40 failed", s.OK, s.Uploaded, s.Failed, s.Errors)
	}
	for _, e := range s.Errors {
		if !strings.Contains(e.Error, "PermissionDenied") {
			t.Errorf("error of %s: %s; want PermissionDenied", e.Name, e.Error)
		}
	}
	if v := s.Verify; !v.Passed || v.Verified != 37 || v.Listed != 37 {
		t.Errorf("verification %+v; want the 37 uploaded objects, and nothing of the failed ones", v)
	}
}

func TestText(t *testing.T) {
	hermetic(t)
	code, out, errOut := runMain(t, "-n", "30", "-tenant", "t1")
	if code != 0 {
		t.Fatalf("exit status %d\n%s\n%s", code, out, errOut)
	}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if n := utf8.RuneCountInString(line); n > textWidth {
			t.Errorf("a line of %d columns, more than %d: %q", n, textWidth, line)
		}
	}
	// The text without its line breaks.
	flat := strings.ReplaceAll(out, "\n"+strings.Repeat(" ", labelWidth), " ")
	for _, want := range []string{
		"objup smallobjects: 30 generated objects (seed 1)\n",
		"target     gs://objup-smallobjects/smallobjects/ on the embedded fake GCS (gRPC 127.0.0.1:",
		"30 ok, 0 failed",
		"objects/s",
		"pace       objects/s by tenth of the run: ",
		"latency    p50 ",
		"memory     client and embedded fake, in one process: ",
		"allocations per object",
		"30 gets, ",
		`30 of 30 calls to the fake carried tenant "t1"`,
		"verify     OK: 30 of 30 uploaded objects verified",
		"result     OK",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

func TestWrap(t *testing.T) {
	long := strings.Repeat("x", 150)
	for _, tc := range []struct {
		first, text string
		want        string
	}{
		{"  label      ", "a b c", "  label      a b c\n"},
		{"  label      ", "", "  label      \n"},
		{"  label      ", strings.Repeat("word ", 20), "  label      " + strings.TrimSpace(strings.Repeat("word ", 13)) + "\n" +
			strings.Repeat(" ", labelWidth) + strings.TrimSpace(strings.Repeat("word ", 7)) + "\n"},
		{"  label      ", "a " + long, "  label      a\n" + strings.Repeat(" ", labelWidth) + long[:67] + "\n" +
			strings.Repeat(" ", labelWidth) + long[67:134] + "\n" + strings.Repeat(" ", labelWidth) + long[134:] + "\n"},
		{"title: ", "é" + strings.Repeat("é", 40), "title: " + strings.Repeat("é", 36) + "\n" + strings.Repeat(" ", labelWidth) + strings.Repeat("é", 5) + "\n"},
	} {
		got := wrap(tc.first, tc.text)
		if got != tc.want {
			t.Errorf("wrap(%q, %q) =\n%s\nwant\n%s", tc.first, tc.text, got, tc.want)
		}
		for _, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
			if len(line) > textWidth {
				t.Errorf("line of %d bytes: %q", len(line), line)
			}
		}
	}
}

func TestUsage(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string // in stderr
	}{
		{[]string{"-n", "-1"}, "-n -1"},
		{[]string{"-concurrency", "0"}, "-concurrency 0"},
		{[]string{"-min-size", "2KiB", "-max-size", "1KiB"}, "-min-size 2KiB is larger than -max-size 1KiB"},
		{[]string{"-min-size", "-1"}, "cannot be negative"},
		{[]string{"-max-size", "1GiB"}, "small objects"},
		{[]string{"-max-size", "lots"}, "is not a size"},
		{[]string{"-dir", "/nonexistent/objup"}, "no such file or directory"},
		{[]string{"-dir", file}, "is not a directory"},
		{[]string{"-dir", "."}, ""}, // valid, combined below
		{[]string{"-buffers", "heap"}, `-buffers "heap"`},
		{[]string{"-tenant", "a b"}, "-tenant"},
		{[]string{"-tenant", ""}, "-tenant"},
		{[]string{"-tenants", "0"}, "-tenants 0: at least one tenant"},
		{[]string{"-tenants", "-3"}, "-tenants -3"},
		{[]string{"-tenants", "many"}, `invalid value "many" for flag -tenants`},
		{[]string{"-tenant", "a", "-tenants", "2"}, "-tenant and -tenants exclude each other"},
		{[]string{"-tenants", "1", "-tenant", "a"}, "-tenant and -tenants exclude each other"},
		{[]string{"-nope"}, "flag provided but not defined"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-http-endpoint", "http://127.0.0.1:1"}, "not to the embedded fake"},
		{[]string{"-endpoint", "127.0.0.1:1", "-http-endpoint", "127.0.0.1:2"}, "want a URL"},
		{[]string{"-timeout", "-1s"}, "cannot be negative"},
		{[]string{"-noisy-tenant", "2GiB"}, "-noisy-tenant 2GiB: at most 1GiB"},
		{[]string{"-noisy-tenant", "1MiB", "-noisy-concurrency", "0"}, "-noisy-concurrency 0"},
		{[]string{"-budget", "1KiB"}, "-budget 1KiB: at least one 256KiB buffer"},
	}
	for _, tt := range tests {
		if tt.want == "" {
			// -dir with a flag that only generated objects take.
			tt.args, tt.want = append(tt.args, "-n", "5"), "-n does not apply with -dir"
		}
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			hermetic(t)
			code, out, errOut := runMain(t, tt.args...)
			if code != 2 || out != "" || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit status %d, stdout %q, stderr %q; want 2 and %q on stderr", code, out, errOut, tt.want)
			}
		})
	}
	t.Run("help", func(t *testing.T) {
		code, out, errOut := runMain(t, "-h")
		if code != 0 || out != "" || !strings.Contains(errOut, "Usage: smallobjects") || !strings.Contains(errOut, "-buffers") {
			t.Errorf("exit status %d, stdout %q, stderr %q; want 0 and the usage", code, out, errOut)
		}
	})
}

// TestBadBucket checks a bucket name that UploadMany rejects before sending
// anything: a usage error.
func TestBadBucket(t *testing.T) {
	hermetic(t)
	srv := fakes.NewTest(t)
	code, out, errOut := runMain(t, "-json", "-quiet", "-n", "3", "-endpoint", srv.GRPCAddr(), "-bucket", "Bad_Bucket")
	if code != 2 || out != "" || !strings.Contains(errOut, "Bad_Bucket") {
		t.Errorf("exit status %d, stdout %q, stderr %q; want 2 and the bucket named", code, out, errOut)
	}
	if n := len(srv.Calls()); n != 0 {
		t.Errorf("%d calls reached the server", n)
	}
}

func TestPercentile(t *testing.T) {
	d := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	var ds []time.Duration
	for _, v := range d {
		ds = append(ds, time.Duration(v))
	}
	for _, tt := range []struct {
		p    float64
		want time.Duration
	}{{50, 5}, {95, 10}, {99, 10}, {10, 1}, {11, 2}, {100, 10}} {
		if got := percentile(ds, tt.p); got != tt.want {
			t.Errorf("p%v = %v, want %v", tt.p, got, tt.want)
		}
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("p50 of nothing = %v", got)
	}
}

func TestParseSize(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"512", 512, true}, {"1KiB", 1024, true}, {"64KiB", 65536, true},
		{"3 MiB", 3 << 20, true}, {"1GiB", 1 << 30, true}, {"10B", 10, true},
		{"1KB", 0, false}, {"", 0, false}, {"KiB", 0, false}, {"1.5KiB", 0, false}, {"99999999999GiB", 0, false},
	} {
		got, err := parseSize(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// TestTimeout checks that a run cut short by -timeout fails without
// verifying, and leaves nothing running.
func TestTimeout(t *testing.T) {
	hermetic(t)
	for _, timeout := range []string{"1ns", "20ms"} {
		code, out, errOut := runMain(t, "-json", "-quiet", "-n", "3000", "-timeout", timeout)
		if code != 1 {
			t.Fatalf("-timeout %s: exit status %d, want 1\n%s\n%s", timeout, code, out, errOut)
		}
		if out == "" {
			continue // cut short before UploadMany began: an error on stderr
		}
		var s summary
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatal(err)
		}
		if s.OK || s.Failed == 0 || s.Verify.Method != verifyNone || !strings.Contains(s.Verify.Note, "deadline exceeded") {
			t.Errorf("-timeout %s: ok %v, failed %d, verification %+v; want failures and no verification", timeout, s.OK, s.Failed, s.Verify)
		}
	}
}

// TestTenants spreads the objects over tenants with -tenants, against a fake
// started apart: the per-tenant summary, built from the client's metrics,
// counts per tenant what the fake stored for it, and failures land on the
// tenant of the item that failed.
func TestTenants(t *testing.T) {
	tests := []struct {
		name string
		args []string
		// fail makes the fake fail these WriteObject calls (1-based);
		// with -concurrency 1 call i+1 uploads item i.
		fail []int
		// want are the tenants with their stored objects and failures.
		want map[string][2]int64
	}{
		{"one", []string{"-n", "20", "-tenants", "1"}, nil, map[string][2]int64{"t0": {20, 0}}},
		{"four", []string{"-n", "50", "-tenants", "4"}, nil, map[string][2]int64{"t0": {13, 0}, "t1": {13, 0}, "t2": {12, 0}, "t3": {12, 0}}},
		{"more tenants than objects", []string{"-n", "3", "-tenants", "10"}, nil, map[string][2]int64{"t0": {1, 0}, "t1": {1, 0}, "t2": {1, 0}}},
		{"resumable", []string{"-n", "6", "-tenants", "2", "-min-size", "300KiB", "-max-size", "600KiB"}, nil, map[string][2]int64{"t0": {3, 0}, "t1": {3, 0}}},
		{"failures", []string{"-n", "12", "-tenants", "3", "-concurrency", "1"}, []int{2, 6, 9},
			map[string][2]int64{"t0": {4, 0}, "t1": {3, 1}, "t2": {2, 2}}},
		{"single tenant", []string{"-n", "7", "-tenant", "acme"}, nil, map[string][2]int64{"acme": {7, 0}}},
		{"no tenant", []string{"-n", "7"}, nil, map[string][2]int64{"": {7, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hermetic(t)
			srv := fakes.NewTest(t, fakes.WithBucket(defaultBucket))
			for _, nth := range tt.fail {
				srv.FailCall(fakes.MethodWriteObject, nth, codes.PermissionDenied)
			}
			code := 0
			if len(tt.fail) > 0 {
				code = 1
			}
			s := runJSON(t, code, append([]string{"-endpoint", srv.GRPCAddr(), "-http-endpoint", srv.HTTPURL(), "-prefix", "p/"}, tt.args...)...)
			stored := map[string]fakes.Usage{}
			for _, u := range srv.Usage() {
				stored[u.Tenant] = u
			}
			var objects, bytes int64
			for _, ts := range s.ByTenant {
				want, ok := tt.want[ts.Tenant]
				if !ok {
					t.Errorf("tenant %q in the summary: %+v", ts.Tenant, ts)
					continue
				}
				u := stored[ts.Tenant]
				if ts.Objects != want[0] || ts.Failed != want[1] || ts.Objects != u.Objects || ts.Bytes != u.Bytes {
					t.Errorf("tenant %q: %d objects, %d bytes, %d failed; want %d objects, %d failed, and the fake stored %d objects, %d bytes",
						ts.Tenant, ts.Objects, ts.Bytes, ts.Failed, want[0], want[1], u.Objects, u.Bytes)
				}
				// Objects above one 256 KiB chunk, and only those,
				// take the resumable path.
				wantResumable := int64(0)
				if tt.name == "resumable" {
					wantResumable = ts.Objects
				}
				if ts.Resumable != wantResumable {
					t.Errorf("tenant %q: %d of %d objects took the resumable path", ts.Tenant, ts.Resumable, ts.Objects)
				}
				if ts.Objects > 0 && (ts.MeanMS <= 0 || ts.P50MS <= 0 || ts.P50MS > ts.P95MS) {
					t.Errorf("tenant %q: durations mean %v, p50 %v, p95 %v", ts.Tenant, ts.MeanMS, ts.P50MS, ts.P95MS)
				}
				objects, bytes = objects+ts.Objects, bytes+ts.Bytes
			}
			if len(s.ByTenant) != len(tt.want) || objects != int64(s.Uploaded) || bytes != s.Bytes {
				t.Errorf("%d tenants with %d objects, %d bytes; want %d tenants, and the %d objects, %d bytes uploaded",
					len(s.ByTenant), objects, bytes, len(tt.want), s.Uploaded, s.Bytes)
			}
		})
	}
}

// TestTenantsText checks the text summary of a run over more tenants than
// it lists, on the resumable path.
func TestTenantsText(t *testing.T) {
	hermetic(t)
	code, out, errOut := runMain(t, "-n", "40", "-tenants", "12", "-min-size", "200KiB", "-max-size", "400KiB", "-concurrency", "4")
	if code != 0 {
		t.Fatalf("exit status %d\n%s\n%s", code, out, errOut)
	}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if n := utf8.RuneCountInString(line); n > textWidth {
			t.Errorf("a line of %d columns, more than %d: %q", n, textWidth, line)
		}
	}
	flat := strings.ReplaceAll(out, "\n"+strings.Repeat(" ", labelWidth), " ")
	for _, want := range []string{
		"tenants t0..t11",
		"by tenant  from the client's OpenTelemetry metrics",
		"tenant     objects     bytes failed retries  p50 ms  p95 ms mean ms",
		" t0               4 ",
		" t9               3 ",
		"... and 2 more tenants (all of them with -json)",
		"calls to the fake carried one of the run's tenants",
		"result     OK",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, " t10 ") {
		t.Errorf("summary lists more than %d tenants:\n%s", maxTenantRows, out)
	}
}

func TestNaturalCompare(t *testing.T) {
	got := []string{"t10", "t2", "", "t1", "b", "a10", "a9", "t01", "t0"}
	slices.SortFunc(got, naturalCompare)
	want := []string{"", "a9", "a10", "b", "t0", "t1", "t01", "t2", "t10"}
	if !slices.Equal(got, want) {
		t.Errorf("sorted %q; want %q", got, want)
	}
}

func TestQuantile(t *testing.T) {
	// 10 values in (0.001, 0.0025] and 10 in (0.0025, 0.005], from 0.002 to
	// 0.004.
	h := histogram{bounds: []float64{0.001, 0.0025, 0.005}, counts: []uint64{0, 10, 10, 0}, count: 20, min: 0.002, max: 0.004}
	for _, tt := range []struct{ q, want float64 }{
		{0.5, 0.0025}, {0.25, 0.00225}, {0.75, 0.00325}, {1, 0.004}, {0.05, 0.00205},
	} {
		if got := h.quantile(tt.q); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("quantile(%v) = %v, want %v", tt.q, got, tt.want)
		}
	}
	if got := (&histogram{}).quantile(0.5); got != 0 {
		t.Errorf("quantile of nothing = %v", got)
	}
}

// TestNoisyTenant: -noisy-tenant loads the client with a second tenant's
// large uploads while the objects go up, under the pool budget, fair and
// not; the objects are all stored and verified, the noisy tenant's bytes
// went out and none of its objects was stored.
func TestNoisyTenant(t *testing.T) {
	for _, fair := range []string{"-fair=true", "-fair=false"} {
		t.Run(fair, func(t *testing.T) {
			hermetic(t)
			s := runJSON(t, 0, "-n", "300", "-tenants", "2", "-noisy-tenant", "1MiB", "-noisy-concurrency", "4", "-budget", "2MiB", fair)
			if !s.OK || s.Uploaded != 300 || !s.Verify.Passed {
				t.Fatalf("ok %v, %d uploaded, verify %+v", s.OK, s.Uploaded, s.Verify)
			}
			n := s.Noisy
			if n == nil || n.Size != 1<<20 || n.Concurrency != 4 || n.Budget != 2<<20 || n.Fair != (fair == "-fair=true") {
				t.Fatalf("noisy summary %+v", n)
			}
			if n.Bytes <= 0 {
				t.Fatalf("the noisy tenant sent nothing: %+v", n)
			}
			if s.Pool.InUseBytes != 0 || s.Pool.BudgetWaits == 0 {
				t.Fatalf("pool %+v: want nothing in use at the end, and waits at the budget", s.Pool)
			}
		})
	}
}

// TestWriteRate: with -write-rate the embedded fake refuses writes over its
// rate; with the admission stage every object is stored all the same, and
// the report shows the fake's counts and the rate the client learnt.
func TestWriteRate(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		on   bool
	}{
		{"admission", nil, true},
		{"without admission", []string{"-admission=false"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hermetic(t)
			s := runJSON(t, 0, append([]string{"-n", "600", "-concurrency", "32", "-write-rate", "300"}, tc.args...)...)
			if !s.OK || s.Uploaded != 600 || !s.Verify.Passed {
				t.Fatalf("ok %v, %d uploaded, verify %+v", s.OK, s.Uploaded, s.Verify)
			}
			a := s.Admission
			if a == nil || a.On != tc.on || a.WriteRate != 300 || a.Admitted != 600 {
				t.Fatalf("admission summary %+v: want the stage %v, the fake's 300 writes/s, 600 writes admitted", a, tc.on)
			}
			if tc.on && (a.Rejections != a.Refused || a.Refused > 0 && a.LearnedRate == 0) {
				t.Fatalf("admission summary %+v: the client saw other refusals than the fake made, or learnt no rate", a)
			}
		})
	}
}
