package header_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"google.golang.org/grpc/metadata"

	"github.com/objup/objup/header"
)

func printMD(md metadata.MD) {
	for _, k := range slices.Sorted(maps.Keys(md)) {
		fmt.Println(k, md[k])
	}
}

func ExampleAppend() {
	// Each layer of a service adds its own pairs; nothing earlier is copied.
	ctx := header.Append(context.Background(), "X-Request-ID", "req-1")
	ctx = header.Append(ctx, "x-request-id", "req-2", "app", "thumbs")
	printMD(header.Flatten(ctx))
	// Output:
	// app [thumbs]
	// x-request-id [req-1 req-2]
}

func ExampleAppendChecked() {
	// A header forwarded from an incoming HTTP request is untrusted.
	_, err := header.AppendChecked(context.Background(), "x-forwarded-note", "hi\r\nX-Evil: 1")
	fmt.Println(err)
	_, err = header.AppendChecked(context.Background(), "x note", "hi")
	fmt.Println(err)
	// Output:
	// header: pair 0: value of key "x-forwarded-note" has a CR or LF at byte 2
	// header: pair 0: key "x note" has byte 0x20 at 1; keys take the bytes 0-9 a-z A-Z and "-_."
}

func ExampleWithTenant() {
	ctx, err := header.WithTenant(context.Background(), "team-a")
	if err != nil {
		panic(err)
	}
	ctx, _ = header.WithTenant(ctx, "team-b") // the last one wins
	fmt.Println(header.Tenant(ctx))

	_, err = header.WithTenant(ctx, "team a|team b")
	fmt.Println(err)
	// Output:
	// team-b true
	// header: tenant ID has byte 0x20 at 4; tenant IDs take 0-9 a-z A-Z ! - _ . * ' ( )
}

func ExampleOutgoingContext() {
	// Metadata attached with grpc's functions comes first.
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-request-id", "req-1")
	ctx, _ = header.WithTenant(ctx, "team-a")
	ctx = header.Append(ctx, "x-request-id", "req-2")

	// Once per RPC, with the routing header last.
	rpc := header.OutgoingContext(ctx, "x-goog-request-params", "bucket=projects/_/buckets/logs")
	md, _ := metadata.FromOutgoingContext(rpc)
	printMD(md)
	// Output:
	// x-goog-request-params [bucket=projects/_/buckets/logs]
	// x-request-id [req-1 req-2]
	// x-scope-orgid [team-a]
}

func ExampleSetHTTP() {
	ctx, _ := header.WithTenant(context.Background(), "team-a")
	ctx = header.Append(ctx, "x-request-id", "req-1")

	h := http.Header{"X-Request-Id": {"stale"}, "Accept": {"application/json"}}
	header.SetHTTP(ctx, h)
	for _, k := range slices.Sorted(maps.Keys(h)) {
		fmt.Println(k, h[k])
	}
	// Output:
	// Accept [application/json]
	// X-Request-Id [req-1]
	// X-Scope-Orgid [team-a]
}

func ExampleFromIncoming() {
	// In a gRPC handler, ctx carries the incoming metadata.
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(
		"x-scope-orgid", "team-a",
		"x-scope-orgid", "team-b",
		"x-request-id", "req-1",
	))
	fmt.Printf("%q\n", header.FromIncoming(ctx, header.TenantKey))
	fmt.Printf("%q\n", header.FromIncoming(ctx, "x-missing"))
	// Output:
	// "team-b"
	// ""
}
