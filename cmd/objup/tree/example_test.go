package tree_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/objup/objup/cmd/objup/tree"
	"github.com/objup/objup/fakes"
	"github.com/objup/objup/uploader"
)

// Upload a directory with a journal: a second run, after the first ended
// or was killed, sends only what is not stored yet.
func ExampleUpload() {
	// A fake GCS stands in for the service.
	srv, err := fakes.New(fakes.WithBucket("example-bucket"))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	c, err := uploader.NewClient(ctx,
		option.WithEndpoint(srv.GRPCAddr()),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	dir, _ := os.MkdirTemp("", "tree-example")
	defer os.RemoveAll(dir)
	_ = os.MkdirAll(filepath.Join(dir, "logs"), 0o755)
	_ = os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "logs", "b.log"), []byte("world"), 0o644)

	// The journal's directory keeps what a later run needs.
	jdir, _ := os.MkdirTemp("", "tree-example-journal")
	defer os.RemoveAll(jdir)
	opts := tree.Options{JournalDir: jdir}

	sum, err := tree.Upload(ctx, c, dir, "example-bucket", "backup", opts)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sum.Uploaded, "uploaded")

	sum, err = tree.Upload(ctx, c, dir, "example-bucket", "backup", opts)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sum.Uploaded, "uploaded,", sum.Unchanged, "unchanged")

	objs, _ := srv.ListObjects("example-bucket", "")
	for _, o := range objs {
		fmt.Println(o.Name, o.Size)
	}
	// Output:
	// 2 uploaded
	// 0 uploaded, 2 unchanged
	// backup/a.txt 5
	// backup/logs/b.log 5
}
