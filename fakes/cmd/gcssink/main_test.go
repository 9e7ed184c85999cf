package main

import (
	"bufio"
	"bytes"
	"context"
	"hash/crc32"
	"io"
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

// firstLine reads r line by line in a goroutine: it sends the first line
// (or "" at EOF) on the returned channel, drains the rest, then calls after,
// if not nil.
func firstLine(r io.Reader, after func()) <-chan string {
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		first := ""
		if sc.Scan() {
			first = sc.Text()
		}
		line <- first
		for sc.Scan() {
		}
		if after != nil {
			after()
		}
	}()
	return line
}

// addr checks the address line gcssink prints and returns the address.
func addr(t *testing.T, line <-chan string) string {
	t.Helper()
	select {
	case got := <-line:
		a, ok := strings.CutPrefix(got, "grpc 127.0.0.1:")
		if !ok || a == "" {
			t.Fatalf("gcssink printed %q", got)
		}
		return "127.0.0.1:" + a
	case <-time.After(60 * time.Second):
		t.Fatal("gcssink printed no address within 60 s")
	}
	return ""
}

// exercise writes a 1 KiB object, then sends one with a wrong CRC32C, which
// the sink refuses.
func exercise(t *testing.T, addr string) {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	data := bytes.Repeat([]byte("sink"), 256)
	crc := crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))
	for _, tc := range []struct {
		crc  uint32
		code codes.Code
	}{{crc, codes.OK}, {crc + 1, codes.DataLoss}} {
		st, err := wire.NewWriteObjectStream(ctx, cc)
		if err != nil {
			t.Fatal(err)
		}
		st.Send(&wire.WriteObjectRequest{
			FirstMessage: &wire.WriteObjectRequest_WriteObjectSpec{WriteObjectSpec: &wire.WriteObjectSpec{
				Resource: &wire.Object{Bucket: "projects/_/buckets/any-bucket", Name: "hello"},
			}},
			Data:        &wire.WriteObjectRequest_ChecksummedData{ChecksummedData: &wire.ChecksummedData{Content: data, Crc32C: &tc.crc}},
			FinishWrite: true,
		})
		resp, err := st.CloseAndRecv()
		if status.Code(err) != tc.code {
			t.Fatalf("WriteObject with CRC32C %#x: %v; want %v", tc.crc, err, tc.code)
		}
		if err == nil && (resp.GetResource().GetSize() != 1024 || resp.GetResource().GetChecksums().GetCrc32C() != crc) {
			t.Fatalf("WriteObject = %v", resp)
		}
	}
}

// wantStats is what gcssink reports after exercise.
const wantStats = "gcssink: 1 objects (1024 bytes) finalized; 2 write messages, 1024 content bytes received; 0 resumable sessions; 1 failed calls\n"

func TestRun(t *testing.T) {
	p := cmdtest.Start(t, run, "-grpc", ":0")
	exercise(t, addr(t, firstLine(p.Stdout, nil)))
	stderr := p.StopOK(t)
	if got := stderr; got != wantStats {
		t.Fatalf("stderr %q, want %q", got, wantStats)
	}
}

func TestRunErrors(t *testing.T) {
	cmdtest.CheckUsage(t, run, []cmdtest.UsageError{
		{Args: []string{"-nope"}, Code: 2, Want: "flag provided but not defined"},
		{Args: []string{"extra"}, Code: 2, Want: "unexpected arguments"},
		{Args: []string{"-grpc", "bad"}, Code: 1, Want: `sink address "bad"`},
		{Args: []string{"-grpc", "127.0.0.1:99999"}, Code: 1, Want: "sink listener"},
		{Args: []string{"-zonal-bucket", "ok-bucket,B"}, Code: 1, Want: `zonal bucket: bucket name "B"`},
	})
}

// TestBinary builds gcssink, runs it as the contract says, and stops it with
// each signal it handles.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := filepath.Join(t.TempDir(), "gcssink")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	if out, err := exec.Command("go", append(args, ".")...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(bin, "-grpc", "127.0.0.1:0")
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			line := firstLine(stdout, func() { exited <- cmd.Wait() })
			stopped := false
			defer func() {
				if !stopped {
					cmd.Process.Kill()
					<-exited
				}
			}()
			exercise(t, addr(t, line))
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				stopped = true
				if err != nil {
					t.Fatalf("gcssink exited with %v; stderr %q", err, stderr.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("gcssink did not exit within 30 s of %v", sig)
			}
			if code := cmd.ProcessState.ExitCode(); code != 0 || stderr.String() != wantStats {
				t.Fatalf("exit code %d, stderr %q; want 0 and %q", code, stderr.String(), wantStats)
			}
		})
	}
}

// TestRunZonal checks -zonal-bucket, repeated and as a list: a zonal
// bucket refuses a write that is not appendable and takes an appendable
// one, whose object is RAPID; other buckets take both.
func TestRunZonal(t *testing.T) {
	p := cmdtest.Start(t, run, "-zonal-bucket", "zone-a,zone-b", "-zonal-bucket", "zone-c")
	cc, err := grpc.NewClient(addr(t, firstLine(p.Stdout, nil)), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	for _, tc := range []struct {
		bucket     string
		appendable bool
		code       codes.Code
		class      string
	}{
		{"plain-bucket", false, codes.OK, "STANDARD"},
		{"plain-bucket", true, codes.OK, "STANDARD"},
		{"zone-a", false, codes.InvalidArgument, ""},
		{"zone-b", true, codes.OK, "RAPID"},
		{"zone-c", false, codes.InvalidArgument, ""},
	} {
		st, err := wire.NewBidiWriteObjectStream(t.Context(), cc)
		if err != nil {
			t.Fatal(err)
		}
		st.Send(&wire.BidiWriteObjectRequest{
			FirstMessage: &wire.BidiWriteObjectRequest_WriteObjectSpec{WriteObjectSpec: &wire.WriteObjectSpec{
				Resource:   &wire.Object{Bucket: "projects/_/buckets/" + tc.bucket, Name: "x"},
				Appendable: &tc.appendable,
			}},
			FinishWrite: true,
		})
		st.CloseSend()
		r, err := st.Recv()
		if status.Code(err) != tc.code || err == nil && r.GetResource().GetStorageClass() != tc.class {
			t.Fatalf("write into %s (appendable %v): %v, %v; want %v and class %q", tc.bucket, tc.appendable, r, err, tc.code, tc.class)
		}
	}
	p.StopOK(t)
}
