package main

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/internal/wire"
)

// TestRunCapacity runs gcssink with a write capacity of two writes (and
// one more every 1,000 s): a session start and a one-shot write pass, the
// next one-shot write is refused, and the report at exit counts them.
func TestRunCapacity(t *testing.T) {
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-write-rate", "0.001", "-write-burst", "2"}, pw, &stderr)
		pw.Close()
	}()
	cc, err := grpc.NewClient(addr(t, firstLine(pr, nil)), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer ccancel()
	cctx = metadata.AppendToOutgoingContext(cctx, "x-scope-orgid", "t1")
	spec := func(name string) *wire.WriteObjectSpec {
		return &wire.WriteObjectSpec{Resource: &wire.Object{Bucket: "projects/_/buckets/any-bucket", Name: name}}
	}
	var sr wire.StartResumableWriteResponse
	if err := cc.Invoke(cctx, wire.MethodStartResumableWrite, &wire.StartResumableWriteRequest{WriteObjectSpec: spec("session")}, &sr); err != nil {
		t.Fatal(err)
	}
	for i, want := range []codes.Code{codes.OK, codes.ResourceExhausted} {
		st, err := wire.NewWriteObjectStream(cctx, cc)
		if err != nil {
			t.Fatal(err)
		}
		st.Send(&wire.WriteObjectRequest{
			FirstMessage: &wire.WriteObjectRequest_WriteObjectSpec{WriteObjectSpec: spec("one-shot")},
			Data:         &wire.WriteObjectRequest_ChecksummedData{ChecksummedData: &wire.ChecksummedData{Content: []byte("x")}},
			FinishWrite:  true,
		})
		_, err = st.CloseAndRecv()
		if status.Code(err) != want {
			t.Fatalf("write %d: %v, want %v", i+1, err, want)
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit status %d, stderr %q", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
	out := stderr.String()
	hasRow := func(fields ...string) bool {
		for line := range strings.Lines(out) {
			if slices.Equal(strings.Fields(line), fields) {
				return true
			}
		}
		return false
	}
	if !strings.Contains(out, "gcssink: write capacity per bucket and tenant") ||
		!hasRow("any-bucket", "(all)", "0.001", "2", "1", "0", "0") || !hasRow("t1", "2", "1", "0", "0") {
		t.Fatalf("stderr:\n%s", out)
	}
}

func TestRunCapacityErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-autoscale-max", "5"}, "-autoscale-max need -write-rate or -object-rate"},
		{[]string{"-write-rate", "10", "-autoscale-factor", "0.5"}, "autoscale factor 0.5 must be more than 1"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), tc.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) || stdout.Len() != 0 {
			t.Errorf("run(%q) = %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, stdout.String(), stderr.String(), tc.want)
		}
	}
}
