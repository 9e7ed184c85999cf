package writes

import (
	"bytes"
	"crypto/md5"
	"hash/crc32"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/objup/objup/internal/crc32c"
	"github.com/objup/objup/internal/wire"
)

func i64(v int64) *int64   { return &v }
func u32(v uint32) *uint32 { return &v }

func TestCheckMessage(t *testing.T) {
	for _, tc := range []struct {
		name      string
		size      int64
		limit     *int64
		offset, n int64
		overlap   bool
		want      codes.Code
	}{
		{"at the end", 10, nil, 10, 5, false, codes.OK},
		{"gap", 10, nil, 11, 5, false, codes.InvalidArgument},
		{"overlap refused", 10, nil, 9, 5, false, codes.InvalidArgument},
		{"overlap allowed", 10, nil, 9, 5, true, codes.OK},
		{"negative offset", 0, nil, -1, 5, true, codes.InvalidArgument},
		{"at the message limit", 0, nil, 0, MaxMessage, false, codes.OK},
		{"over the message limit", 0, nil, 0, MaxMessage + 1, false, codes.InvalidArgument},
		{"up to object_size", 10, i64(15), 10, 5, false, codes.OK},
		{"beyond object_size", 10, i64(14), 10, 5, false, codes.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &State{Size: tc.size, Limit: tc.limit}
			if got := status.Code(s.CheckMessage(tc.offset, tc.n, tc.overlap)); got != tc.want {
				t.Fatalf("code %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFinish writes content in parts and checks the finish against what
// the writer may declare.
func TestFinish(t *testing.T) {
	content := bytes.Repeat([]byte("objup "), 1000)
	crc := crc32.Checksum(content, crc32c.Table)
	sum := md5.Sum(content)
	for _, tc := range []struct {
		name  string
		limit *int64
		sums  *wire.ObjectChecksums
		want  codes.Code
	}{
		{"nothing declared", nil, nil, codes.OK},
		{"all declared", i64(int64(len(content))), &wire.ObjectChecksums{Crc32C: u32(crc), Md5Hash: sum[:]}, codes.OK},
		{"short of object_size", i64(int64(len(content)) + 1), nil, codes.InvalidArgument},
		{"wrong CRC32C", nil, &wire.ObjectChecksums{Crc32C: u32(crc + 1)}, codes.DataLoss},
		{"wrong MD5", nil, &wire.ObjectChecksums{Md5Hash: make([]byte, md5.Size)}, codes.DataLoss},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &State{Limit: tc.limit, MD5: md5.New()}
			for off := 0; off < len(content); off += 700 {
				p := content[off:min(off+700, len(content))]
				if err := s.CheckMessage(int64(off), int64(len(p)), false); err != nil {
					t.Fatal(err)
				}
				s.MD5.Write(p)
				s.Add(int64(len(p)), crc32.Checksum(p, crc32c.Table))
			}
			if s.Size != int64(len(content)) || s.CRC != crc {
				t.Fatalf("size %d CRC32C %#08x, want %d %#08x", s.Size, s.CRC, len(content), crc)
			}
			s.Declare(tc.sums)
			got, err := s.Finish(nil)
			if code := status.Code(err); code != tc.want {
				t.Fatalf("Finish: %v, want code %v", err, tc.want)
			}
			if err == nil && !bytes.Equal(got, sum[:]) {
				t.Fatalf("MD5 %x, want %x", got, sum)
			}
		})
	}
}

func TestMergeSums(t *testing.T) {
	first := MergeSums(nil, &wire.ObjectChecksums{Crc32C: u32(1)})
	both := MergeSums(first, &wire.ObjectChecksums{Md5Hash: []byte{2}})
	if both.GetCrc32C() != 1 || !bytes.Equal(both.GetMd5Hash(), []byte{2}) {
		t.Fatalf("merged %v", both)
	}
	if again := MergeSums(both, &wire.ObjectChecksums{Crc32C: u32(3)}); again.GetCrc32C() != 3 || len(again.GetMd5Hash()) != 1 {
		t.Fatalf("merged again %v", again)
	}
}

func TestCheckFinish(t *testing.T) {
	s := &State{Size: 5}
	for off, want := range map[int64]codes.Code{5: codes.OK, 4: codes.InvalidArgument, 6: codes.InvalidArgument} {
		if got := status.Code(s.CheckFinish(off)); got != want {
			t.Errorf("finish at %d: %v, want %v", off, got, want)
		}
	}
}
