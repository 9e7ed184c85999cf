package fakes_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/objup/objup/fakes"
)

// TestUnknownRPC checks that a method outside the fake's table of RPCs is
// codes.Unimplemented, with a message that names it, and that the request
// log records it under its name.
func TestUnknownRPC(t *testing.T) {
	srv := fakes.NewTest(t)
	cc := dial(t, srv)
	err := cc.Invoke(context.Background(), "/google.storage.v2.Storage/NoSuchMethod", &emptypb.Empty{}, &emptypb.Empty{})
	if status.Code(err) != codes.Unimplemented || !strings.Contains(err.Error(), "NoSuchMethod") {
		t.Fatalf("NoSuchMethod: %v, want Unimplemented naming it", err)
	}
	var found bool
	for _, c := range srv.Calls() {
		found = found || c.Method == "NoSuchMethod" && c.Code == codes.Unimplemented
	}
	if !found {
		t.Errorf("the request log does not record NoSuchMethod: %+v", srv.Calls())
	}
}
