package uploadertest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"github.com/objup/objup/uploader"
)

// A process keeps its uploads' handles in a journal; at start it resumes
// what an earlier process left there (a deploy, an OOM kill), from the
// same files, and the service tells where each goes on.
func Example_journal() {
	srv, c := startFake()
	defer srv.Close()
	defer c.Close()
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "journal")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	j, err := uploader.OpenJournal(dir)
	if err != nil {
		log.Fatal(err)
	}
	// What an earlier process left: none here.
	left, err := j.Handles()
	if err != nil {
		log.Fatal(err)
	}
	for _, h := range left {
		f, err := os.Open(h.Object) // the source the upload began with
		if err != nil {
			log.Fatal(err)
		}
		if _, err := c.Resume(ctx, h, f, uploader.WithJournal(j)); err != nil {
			log.Print(err) // uploader.IsSourceChanged(err): the file changed
		}
		f.Close()
	}
	// New uploads keep their handles in the journal while they run.
	data := bytes.Repeat([]byte("log line\n"), 1<<20/9*3) // about 3 MiB: a resumable session
	attrs, err := c.Upload(ctx, "demo", "logs/big.txt", bytes.NewReader(data), uploader.WithJournal(j))
	if err != nil {
		log.Fatal(err)
	}
	left, _ = j.Handles()
	fmt.Println("resumed", len(left), "stored", attrs.Size, "bytes")
	// Output: resumed 0 stored 3145716 bytes
}

// Writer.Handle may be taken at any moment (here as JSON, to be stored
// anywhere); Client.Resume continues the upload from the same source in
// any process. The handle of an upload that finished returns its object.
func Example_resume() {
	srv, c := startFake()
	defer srv.Close()
	defer c.Close()
	ctx := context.Background()
	data := bytes.Repeat([]byte{'x'}, 4<<20)
	w, err := c.NewWriter(ctx, "demo", "big.bin")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		log.Fatal(err)
	}
	h, ok := w.Handle()
	if !ok {
		log.Fatal("no handle")
	}
	saved, err := json.Marshal(h)
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
	// Later, perhaps in another process:
	var back uploader.Handle
	if err := json.Unmarshal(saved, &back); err != nil {
		log.Fatal(err)
	}
	attrs, err := c.Resume(ctx, back, bytes.NewReader(data))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(back.Kind, attrs.Generation == w.Attrs().Generation)
	_, err = c.Resume(ctx, back, bytes.NewReader(bytes.Repeat([]byte{'y'}, 4<<20)))
	fmt.Println(uploader.IsSourceChanged(err))
	// Output:
	// resumable true
	// true
}
