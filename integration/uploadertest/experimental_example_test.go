package uploadertest_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"time"

	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/objup/objup/fakes"
	"github.com/objup/objup/uploader"
	"github.com/objup/objup/uploader/experimental"
)

// A client for uploads from afar: a connection that does not complete its
// handshake within 2 s is dialled anew, and one upload may have up to
// 128 MiB in flight on a long, fast path (its window starts at 16 MiB and
// grows while the acknowledged rate rises).
func Example_experimentalWithMaxInFlight() {
	srv, err := fakes.New(fakes.WithBucket("demo"))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c, err := uploader.NewClient(context.Background(),
		option.WithEndpoint(srv.GRPCAddr()),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
		option.WithGRPCConnectionPool(8),
		experimental.WithConnectTimeout(2*time.Second),
		experimental.WithMaxInFlight(128<<20))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	attrs, err := c.Upload(context.Background(), "demo", "big.bin", bytes.NewReader(make([]byte, 3<<20)))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(attrs.Size)
	// Output: 3145728
}
