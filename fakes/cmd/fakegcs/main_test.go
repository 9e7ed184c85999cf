package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes/internal/cmdtest"
	"github.com/objup/objup/internal/wire"
)

// raceEnabled is set when the test binary is built with -race, so the
// command is built the same way and reuses the cached packages.
var raceEnabled bool

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// scan reads r line by line in a goroutine: it sends the first two lines
// (or fewer, at EOF) on the returned channel, drains the rest, then calls
// after, if not nil.
// startBin starts the built binary bin with args. It returns the process,
// what it writes to stderr, the lines it writes to stdout (see scan), and
// a channel that receives the result of cmd.Wait once it exited.
func startBin(t *testing.T, bin string, args ...string) (*exec.Cmd, *bytes.Buffer, <-chan []string, chan error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := new(bytes.Buffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	return cmd, stderr, scan(stdout, func() { exited <- cmd.Wait() }), exited
}

func scan(r io.Reader, after func()) <-chan []string {
	lines := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		var got []string
		for len(got) < 2 && sc.Scan() {
			got = append(got, sc.Text())
		}
		lines <- got
		for sc.Scan() {
		}
		if after != nil {
			after()
		}
	}()
	return lines
}

// addrs checks the two address lines fakegcs prints and returns them.
func addrs(t *testing.T, lines <-chan []string) (grpcAddr, httpURL string) {
	t.Helper()
	var got []string
	select {
	case got = <-lines:
	case <-time.After(60 * time.Second):
		t.Fatal("fakegcs printed no addresses within 60 s")
	}
	if len(got) != 2 || !strings.HasPrefix(got[0], "grpc 127.0.0.1:") || !strings.HasPrefix(got[1], "http http://127.0.0.1:") {
		t.Fatalf("fakegcs printed %q", got)
	}
	return strings.TrimPrefix(got[0], "grpc "), strings.TrimPrefix(got[1], "http ")
}

// exercise writes an object over gRPC as tenant t1, reads it back over
// HTTP.
func exercise(t *testing.T, grpcAddr, httpURL, bucket string) {
	t.Helper()
	cc, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "x-scope-orgid", "t1")
	st, err := wire.NewWriteObjectStream(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	st.Send(&wire.WriteObjectRequest{
		FirstMessage: &wire.WriteObjectRequest_WriteObjectSpec{WriteObjectSpec: &wire.WriteObjectSpec{
			Resource: &wire.Object{Bucket: "projects/_/buckets/" + bucket, Name: "hello"},
		}},
		Data:        &wire.WriteObjectRequest_ChecksummedData{ChecksummedData: &wire.ChecksummedData{Content: []byte("hi there")}},
		FinishWrite: true,
	})
	resp, err := st.CloseAndRecv()
	if err != nil || resp.GetResource().GetSize() != 8 {
		t.Fatalf("WriteObject = %v, %v", resp, err)
	}
	hresp, err := http.Get(httpURL + "/storage/v1/b/" + bucket + "/o/hello?alt=media")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(hresp.Body)
	hresp.Body.Close()
	if string(body) != "hi there" {
		t.Fatalf("over HTTP: %s %q", hresp.Status, body)
	}
	http.DefaultClient.CloseIdleConnections()
}

func TestRun(t *testing.T) {
	p := cmdtest.Start(t, run, "-bucket", "one", "-bucket", "two")
	grpcAddr, httpURL := addrs(t, scan(p.Stdout, nil))
	exercise(t, grpcAddr, httpURL, "one")
	exercise(t, grpcAddr, httpURL, "two")

	// The stats document counts the tenant's objects, bytes and calls.
	resp, err := http.Get(httpURL + "/_objup/stats")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Tenants []struct {
			Tenant         string
			Objects, Bytes int64
		}
		Calls []struct {
			Method, Tenant, Code string
			Count                int64
		}
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(st.Tenants) != "[{t1 2 16}]" {
		t.Fatalf("tenants %v", st.Tenants)
	}
	if fmt.Sprint(st.Calls) != "[{WriteObject t1 OK 2} {objects.get  OK 2}]" {
		t.Fatalf("calls %v", st.Calls)
	}

	stderr := p.StopOK(t)
	// On exit: the objects and bytes stored per tenant.
	want := "fakegcs: objects stored per tenant (x-scope-orgid):\n  tenant  objects  bytes\n      t1        2     16\n"
	if got := stderr; got != want {
		t.Fatalf("stderr %q, want %q", got, want)
	}
}

func TestRunErrors(t *testing.T) {
	cmdtest.CheckUsage(t, run, []cmdtest.UsageError{
		{Args: []string{"-nope"}, Code: 2, Want: "flag provided but not defined"},
		{Args: []string{"extra"}, Code: 2, Want: "unexpected arguments"},
		{Args: []string{"-bucket", "UPPER"}, Code: 1, Want: `bucket name "UPPER"`},
		{Args: []string{"-grpc", "bad"}, Code: 1, Want: `gRPC address "bad"`},
		{Args: []string{"-call-log", "-1"}, Code: 1, Want: "call log size -1 is negative"},
		{Args: []string{"-bucket", "b", "-zonal-bucket", "b"}, Code: 1, Want: `bucket "b" is given both as a zonal bucket`},
		{Args: []string{"-credential", "tok"}, Code: 2, Want: "want TOKEN=ROLE"},
		{Args: []string{"-commit-delay", "2s", "-commit-delay-max", "1s"}, Code: 2, Want: "want at least -commit-delay"},
		{Args: []string{"-commit-delay", "-1s"}, Code: 1, Want: "commit delay -1s is negative"},
		{Args: []string{"-credential", "tok=owner"}, Code: 2, Want: `unknown role "owner"`},
		{Args: []string{"-cert", "x.pem"}, Code: 2, Want: "-cert needs -https"},
		{Args: []string{"-https", "bad"}, Code: 1, Want: `HTTPS address "bad"`},
	})
}

// TestBinary builds fakegcs, runs it as the contract says, and stops it with
// SIGTERM.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := filepath.Join(t.TempDir(), "fakegcs")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	cmd, stderr, lines, exited := startBin(t, bin, "-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0", "-bucket", "cli")
	stopped := false
	defer func() {
		if !stopped {
			cmd.Process.Kill()
			<-exited
		}
	}()
	grpcAddr, httpURL := addrs(t, lines)
	exercise(t, grpcAddr, httpURL, "cli")

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if !strings.Contains(stderr.String(), "t1        1      8") {
			t.Errorf("stderr %q lacks the usage of tenant t1", stderr.String())
		}
	}()
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Fatalf("fakegcs exited with %v; stderr %q", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("fakegcs did not exit within 30 s of SIGTERM")
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

// TestRunZonal checks -zonal-bucket, repeated and as a list: each bucket
// reports location type "zone" and storage class RAPID, and refuses a
// write that is not appendable with InvalidArgument.
func TestRunZonal(t *testing.T) {
	p := cmdtest.Start(t, run, "-bucket", "plain", "-zonal-bucket", "zone1,zone2", "-zonal-bucket", "zone3")
	grpcAddr, httpURL := addrs(t, scan(p.Stdout, nil))
	exercise(t, grpcAddr, httpURL, "plain")
	cc, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	for _, tc := range []struct {
		bucket, locType, class string
		code                   codes.Code
	}{
		{"plain", "multi-region", "STANDARD", codes.OK},
		{"zone1", "zone", "RAPID", codes.InvalidArgument},
		{"zone2", "zone", "RAPID", codes.InvalidArgument},
		{"zone3", "zone", "RAPID", codes.InvalidArgument},
	} {
		resp, err := http.Get(httpURL + "/storage/v1/b/" + tc.bucket)
		if err != nil {
			t.Fatal(err)
		}
		var b struct{ LocationType, StorageClass string }
		err = json.NewDecoder(resp.Body).Decode(&b)
		resp.Body.Close()
		if err != nil || b.LocationType != tc.locType || b.StorageClass != tc.class {
			t.Fatalf("bucket %s: %+v, %v; want location type %s, class %s", tc.bucket, b, err, tc.locType, tc.class)
		}
		st, err := wire.NewWriteObjectStream(t.Context(), cc)
		if err != nil {
			t.Fatal(err)
		}
		st.Send(&wire.WriteObjectRequest{
			FirstMessage: &wire.WriteObjectRequest_WriteObjectSpec{WriteObjectSpec: &wire.WriteObjectSpec{
				Resource: &wire.Object{Bucket: "projects/_/buckets/" + tc.bucket, Name: "x"},
			}},
			FinishWrite: true,
		})
		if _, err := st.CloseAndRecv(); status.Code(err) != tc.code {
			t.Fatalf("WriteObject into %s: %v, want %v", tc.bucket, err, tc.code)
		}
	}
	http.DefaultClient.CloseIdleConnections()
	p.StopOK(t)
}

// TestRunCredential: -credential holds a token's requests to its role, over
// both APIs; other requests keep full access.
func TestRunCredential(t *testing.T) {
	p := cmdtest.Start(t, run, "-bucket", "bkt", "-credential", "up=objectCreator", "-credential", "read=roles/storage.objectViewer")
	grpcAddr, httpURL := addrs(t, scan(p.Stdout, nil))
	exercise(t, grpcAddr, httpURL, "bkt") // no token: full access
	for _, tc := range []struct {
		token string
		want  int
	}{
		{"", http.StatusOK},
		{"up", http.StatusForbidden},
		{"read", http.StatusOK},
		{"unknown", http.StatusOK},
	} {
		req, err := http.NewRequest("GET", httpURL+"/storage/v1/b/bkt/o/hello", nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("objects.get with token %q: %s, want %d", tc.token, resp.Status, tc.want)
		}
	}
	http.DefaultClient.CloseIdleConnections()
	p.StopOK(t)
}

// TestRunCommitFlags: with drawn commit delays and -deadline-drop, writes
// with a long deadline are stored as usual.
func TestRunCommitFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-commit-delay", "1ms"},
		{"-commit-delay", "1ms", "-commit-delay-max", "3ms", "-commit-seed", "9", "-deadline-drop"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			p := cmdtest.Start(t, run, append([]string{"-bucket", "bkt"}, args...)...)
			grpcAddr, httpURL := addrs(t, scan(p.Stdout, nil))
			exercise(t, grpcAddr, httpURL, "bkt")
			p.StopOK(t)
		})
	}
}

// TestRunHTTPS runs fakegcs with -https and -cert: it prints the HTTPS URL
// as a third line, and the certificate it wrote lets a client read over
// HTTPS what was written over gRPC.
func TestRunHTTPS(t *testing.T) {
	cert := filepath.Join(t.TempDir(), "cert.pem")
	p := cmdtest.Start(t, run, "-bucket", "one", "-https", "127.0.0.1:0", "-cert", cert)
	sc := bufio.NewScanner(p.Stdout)
	var got []string
	for len(got) < 3 && sc.Scan() {
		got = append(got, sc.Text())
	}
	go func() {
		for sc.Scan() {
		}
	}()
	if len(got) != 3 || !strings.HasPrefix(got[2], "https https://127.0.0.1:") {
		t.Fatalf("fakegcs printed %q", got)
	}
	lines := make(chan []string, 1)
	lines <- got[:2]
	grpcAddr, httpURL := addrs(t, lines)
	exercise(t, grpcAddr, httpURL, "one")
	pemBytes, err := os.ReadFile(cert)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		t.Fatalf("%s holds no certificate: %q", cert, pemBytes)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	resp, err := (&http.Client{Transport: tr}).Get(strings.TrimPrefix(got[2], "https ") + "/storage/v1/b/one/o/hello?alt=media")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	tr.CloseIdleConnections()
	if string(body) != "hi there" {
		t.Fatalf("over HTTPS: %s %q", resp.Status, body)
	}
	p.StopOK(t)
}
