// Command official uploads its standard input with the official client
// (cloud.google.com/go/storage), for the size of its module graph.
package main

import (
	"context"
	"flag"
	"io"
	"log"
	"os"

	"cloud.google.com/go/storage"
)

func main() {
	bucket := flag.String("bucket", "", "bucket")
	name := flag.String("name", "", "object name")
	flag.Parse()
	ctx := context.Background()
	c, err := storage.NewGRPCClient(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	w := c.Bucket(*bucket).Object(*name).NewWriter(ctx)
	if _, err := io.Copy(w, os.Stdin); err != nil {
		log.Fatal(err)
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
}
