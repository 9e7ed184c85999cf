package integration

// The JSON API transport side by side with the official client's HTTP
// writer, client-only (the fake in another process), in one run:
//
//	go test -run '^$' -bench 'UploadHTTP' -benchmem -count 5 ./integration/ > http.txt
//	go run golang.org/x/perf/cmd/benchstat@latest -col /client http.txt

import (
	"context"
	"fmt"
	"testing"

	"cloud.google.com/go/storage"
	"google.golang.org/api/option"

	"github.com/objup/objup/uploader"
)

func BenchmarkUploadHTTP(b *testing.B) {
	_, base, stop := startExternalFakeBoth(b)
	defer stop()
	ctx := context.Background()
	endpoint := option.WithEndpoint(base + "/storage/v1/")
	ours, err := uploader.NewClient(ctx, uploader.WithHTTP(), endpoint, option.WithoutAuthentication())
	if err != nil {
		b.Fatal(err)
	}
	defer ours.Close()
	official, err := storage.NewClient(ctx, endpoint, option.WithoutAuthentication())
	if err != nil {
		b.Fatal(err)
	}
	defer official.Close()
	objup := func(ctx context.Context, name string, data []byte) error {
		w, err := ours.NewWriter(ctx, benchBucket, name)
		if err != nil {
			return err
		}
		if _, err := w.Write(data); err != nil {
			w.Close()
			return err
		}
		return w.Close()
	}
	officialWith := func(chunkSize int) uploadFunc { return officialUpload(official, chunkSize) }
	for _, size := range []struct {
		name string
		n    int
	}{{"1KiB", 1 << 10}, {"16KiB", 16 << 10}, {"4MiB", 4 << 20}, {"64MiB", 64 << 20}} {
		data := payload(size.n, uint64(size.n))
		clients := []struct {
			name string
			up   uploadFunc
		}{
			{"objup", objup},
			{"official-0", officialWith(0)},
			{"official-256KiB", officialWith(256 << 10)},
			{"official-16MiB", officialWith(16 << 20)},
		}
		for _, cl := range clients {
			b.Run(fmt.Sprintf("size=%s/client=%s", size.name, cl.name), func(b *testing.B) {
				name := "http/" + size.name + "/" + cl.name
				if err := cl.up(ctx, name, data); err != nil { // warm the connection
					b.Fatal(err)
				}
				runUploads(b, cl.up, name, data)
			})
		}
	}
}
