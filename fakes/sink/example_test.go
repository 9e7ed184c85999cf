package sink_test

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"log"

	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/objup/objup/fakes/sink"
	"github.com/objup/objup/uploader"
)

// A benchmark points its client at a sink: the upload is checked as the
// service checks it (offsets, CRC32C per message and per object,
// finish_write), and its bytes are dropped.
func ExampleNew() {
	k, err := sink.New()
	if err != nil {
		log.Fatal(err)
	}
	defer k.Close()

	ctx := context.Background()
	client, err := uploader.NewClient(ctx,
		option.WithEndpoint(k.GRPCAddr()),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	data := bytes.Repeat([]byte("sink"), 1<<20) // 4 MiB: a resumable upload
	attrs, err := client.Upload(ctx, "any-bucket", "big", bytes.NewReader(data))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(attrs.Size, attrs.CRC32C == crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)))
	st := k.Stats()
	fmt.Printf("%d object, %d bytes checked and dropped, %d resumable session\n", st.Objects, st.Received, st.Sessions)
	// Output:
	// 4194304 true
	// 1 object, 4194304 bytes checked and dropped, 1 resumable session
}
