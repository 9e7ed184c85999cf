// Command sdk uploads its standard input as one object: a service that
// imports only objup's SDK.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/objup/objup/uploader"
)

func main() {
	bucket := flag.String("bucket", "", "bucket")
	name := flag.String("name", "", "object name")
	flag.Parse()
	ctx := context.Background()
	c, err := uploader.NewClient(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	attrs, err := c.Upload(ctx, *bucket, *name, os.Stdin)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(attrs.Name, attrs.Size, attrs.Generation)
}
