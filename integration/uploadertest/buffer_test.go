package uploadertest_test

import (
	"bytes"
	"context"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/uploader"
)

func TestWithBuffer(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	tests := []struct {
		name    string
		bufSize int
		size    int
		wantErr bool
	}{
		{"small buffer, object fits", 4 * kib, 3 * kib, false},
		{"small buffer, object fills it exactly", 4 * kib, 4 * kib, false},
		{"small buffer, object outgrows it", 4 * kib, 4*kib + 1, true},
		{"one quantum, one-shot", q, q, false},
		{"one quantum, large object", q, 3*q + 7, false},
		{"four quanta, large object", 4 * q, 9*q + 1, false},
		{"odd size above a quantum", q + 100, 2*q + 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			buf := make([]byte, tc.bufSize)
			name := "buf/" + tc.name
			data := payload(tc.size, 11)
			w, err := e.c.NewWriter(ctx, bucket, name, uploader.WithBuffer(buf))
			if err != nil {
				t.Fatal(err)
			}
			_, werr := w.Write(data)
			cerr := w.Close()
			if tc.wantErr {
				if werr == nil && cerr == nil {
					t.Fatal("upload succeeded")
				}
				if uploader.CodeOf(cerr) != codes.InvalidArgument {
					t.Fatalf("Close = %v, want InvalidArgument", cerr)
				}
				e.absent(name)
				return
			}
			if werr != nil || cerr != nil {
				t.Fatalf("Write = %v, Close = %v", werr, cerr)
			}
			// The Writer must not touch buf after Close: scribble on it and
			// check the stored object did not change.
			for i := range buf {
				buf[i] = 0xAA
			}
			sameBytes(t, "stored", e.content(name), data)

			// The same buffer serves the next Writer.
			data2 := payload(tc.size, 12)
			if _, err := e.c.Upload(ctx, bucket, name+"/2", bytes.NewReader(data2), uploader.WithBuffer(buf)); err != nil {
				t.Fatal(err)
			}
			for i := range buf {
				buf[i] = 0x55
			}
			sameBytes(t, "stored after reuse", e.content(name+"/2"), data2)
			sameBytes(t, "first object after reuse", e.content(name), data)
		})
	}
}
