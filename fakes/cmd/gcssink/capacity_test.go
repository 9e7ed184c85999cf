package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/fakes/internal/cmdtest"
	"github.com/objup/objup/internal/wire"
)

// TestRunCapacity runs gcssink with a write capacity of two writes (and
// one more every 1,000 s): a session start and a one-shot write pass, the
// next one-shot write is refused, and the report at exit counts them.
func TestRunCapacity(t *testing.T) {
	p := cmdtest.Start(t, run, "-write-rate", "0.001", "-write-burst", "2")
	cc, err := grpc.NewClient(addr(t, firstLine(p.Stdout, nil)), grpc.WithTransportCredentials(insecure.NewCredentials()))
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
	stderr := p.StopOK(t)
	out := stderr
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
	cmdtest.CheckUsage(t, run, []cmdtest.UsageError{
		{Args: []string{"-autoscale-max", "5"}, Code: 2, Want: "-autoscale-max need -write-rate or -object-rate"},
		{Args: []string{"-write-rate", "10", "-autoscale-factor", "0.5"}, Code: 2, Want: "autoscale factor 0.5 must be more than 1"},
	})
}
