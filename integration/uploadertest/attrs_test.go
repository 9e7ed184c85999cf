package uploadertest_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"hash/crc32"
	"io/fs"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/uploader"
	"github.com/objup/objup/uploader/experimental"
)

// TestInvalidAttributesRejectedBeforeAnyRPC: bad attribute values are
// InvalidArgument at NewWriter, with no call made.
func TestInvalidAttributesRejectedBeforeAnyRPC(t *testing.T) {
	e := newEnv(t)
	bad := map[string][]uploader.WriterOption{
		"acl and predefined, one option": {uploader.WithAttrs(uploader.ObjectAttrs{PredefinedACL: "private", ACL: []uploader.ACLRule{{Entity: "allUsers", Role: "READER"}}})},
		"metadata key":                   {uploader.WithAttrs(uploader.ObjectAttrs{Metadata: map[string]string{"": "v"}})},
		"kms key":                        {uploader.WithAttrs(uploader.ObjectAttrs{KMSKeyName: "projects/p/keyRings/r"})},
		"kms key empty part":             {uploader.WithAttrs(uploader.ObjectAttrs{KMSKeyName: "projects//locations/l/keyRings/r/cryptoKeys/k"})},
		"predefined acl":                 {uploader.WithAttrs(uploader.ObjectAttrs{PredefinedACL: "everyone"})},
		"acl role":                       {uploader.WithAttrs(uploader.ObjectAttrs{ACL: []uploader.ACLRule{{Entity: "allUsers", Role: "WRITER"}}})},
		"acl entity":                     {uploader.WithAttrs(uploader.ObjectAttrs{ACL: []uploader.ACLRule{{Role: "READER"}}})},
		"acl and predefined":             {uploader.WithAttrs(uploader.ObjectAttrs{PredefinedACL: "private"}), uploader.WithAttrs(uploader.ObjectAttrs{ACL: []uploader.ACLRule{{Entity: "allUsers", Role: "READER"}}})},
		"retention mode":                 {uploader.WithAttrs(uploader.ObjectAttrs{Retention: &uploader.Retention{RetainUntil: time.Now().Add(time.Hour)}})},
		"retention in the past":          {uploader.WithAttrs(uploader.ObjectAttrs{Retention: &uploader.Retention{Mode: "Locked", RetainUntil: time.Now().Add(-time.Hour)}})},
		"context key":                    {uploader.WithAttrs(uploader.ObjectAttrs{Contexts: map[string]string{"": "v"}})},
		"md5 length":                     {uploader.WithSendMD5([]byte{1, 2, 3})},
		"md5 twice":                      {experimental.WithMD5(), uploader.WithSendMD5(make([]byte, 16))},
		"generation not match":           {uploader.WithConditions(uploader.Conditions{GenerationNotMatch: -1})},
		"metageneration not match":       {uploader.WithConditions(uploader.Conditions{MetagenerationNotMatch: -1})},
		"does not exist and generation":  {uploader.WithConditions(uploader.Conditions{DoesNotExist: true, GenerationMatch: 3})},
		"generation match and not match": {uploader.WithConditions(uploader.Conditions{GenerationMatch: 3, GenerationNotMatch: 4})},
		"metageneration both":            {uploader.WithConditions(uploader.Conditions{MetagenerationMatch: 3, MetagenerationNotMatch: 4})},
	}
	for name, opts := range bad {
		if _, err := e.c.NewWriter(context.Background(), bucket, "o", opts...); uploader.CodeOf(err) != codes.InvalidArgument {
			t.Errorf("%s: NewWriter = %v, want InvalidArgument", name, err)
		}
	}
	if m := e.methods(); len(m) != 0 {
		t.Fatalf("calls made: %v", m)
	}
}

// TestAllFourPreconditions: each precondition lets the write through when it
// holds and fails it with FailedPrecondition, nothing stored, when it does
// not.
func TestAllFourPreconditions(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	first, err := e.c.Upload(ctx, bucket, "pre", bytes.NewReader([]byte("v1")))
	if err != nil {
		t.Fatal(err)
	}
	live, mg := first.Generation, first.Metageneration
	// Each case builds its option from the live generation and
	// metageneration at the time of the write.
	tests := []struct {
		name string
		opt  func(gen, mg int64) uploader.WriterOption
		ok   bool
	}{
		{"generation match", func(gen, _ int64) uploader.WriterOption {
			return uploader.WithConditions(uploader.Conditions{GenerationMatch: gen})
		}, true},
		{"generation match, stale", func(gen, _ int64) uploader.WriterOption {
			return uploader.WithConditions(uploader.Conditions{GenerationMatch: gen - 1})
		}, false},
		{"generation not match, other", func(gen, _ int64) uploader.WriterOption {
			return uploader.WithConditions(uploader.Conditions{GenerationNotMatch: gen - 1})
		}, true},
		{"generation not match, live", func(gen, _ int64) uploader.WriterOption {
			return uploader.WithConditions(uploader.Conditions{GenerationNotMatch: gen})
		}, false},
		{"metageneration match", func(_, mg int64) uploader.WriterOption {
			return uploader.WithConditions(uploader.Conditions{MetagenerationMatch: mg})
		}, true},
		{"metageneration match, wrong", func(_, mg int64) uploader.WriterOption {
			return uploader.WithConditions(uploader.Conditions{MetagenerationMatch: mg + 5})
		}, false},
		{"metageneration not match", func(_, mg int64) uploader.WriterOption {
			return uploader.WithConditions(uploader.Conditions{MetagenerationNotMatch: mg + 5})
		}, true},
		{"metageneration not match, same", func(_, mg int64) uploader.WriterOption {
			return uploader.WithConditions(uploader.Conditions{MetagenerationNotMatch: mg})
		}, false},
	}
	for i, tc := range tests {
		for _, size := range []int{kib, q + 1} {
			data := payload(size, uint64(i))
			a, err := e.c.Upload(ctx, bucket, "pre", bytes.NewReader(data), tc.opt(live, mg))
			if tc.ok != (err == nil) {
				t.Fatalf("%s (%s): %v", tc.name, sizeName(size), err)
			}
			if err != nil {
				if uploader.CodeOf(err) != codes.FailedPrecondition {
					t.Fatalf("%s: %v, want FailedPrecondition", tc.name, err)
				}
				continue
			}
			if a.Generation <= live {
				t.Fatalf("%s: generation %d after %d", tc.name, a.Generation, live)
			}
			live, mg = a.Generation, a.Metageneration
			sameBytes(t, tc.name, e.content("pre"), data)
		}
	}
}

// TestCallerChecksums: checksums the caller already has are sent as they
// are; the service accepts right ones and rejects wrong ones with DATA_LOSS,
// nothing stored, on both paths; objup does not compute an MD5 it was given.
func TestCallerChecksums(t *testing.T) {
	e := newEnv(t)
	for _, size := range []int{kib, 3*q + 7} {
		data := payload(size, 8)
		crc := crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))
		sum := md5.Sum(data)
		tests := []struct {
			name string
			opts []uploader.WriterOption
			ok   bool
		}{
			{"crc32c", []uploader.WriterOption{uploader.WithSendCRC32C(crc)}, true},
			{"md5", []uploader.WriterOption{uploader.WithSendMD5(sum[:])}, true},
			{"both", []uploader.WriterOption{uploader.WithSendCRC32C(crc), uploader.WithSendMD5(sum[:])}, true},
			{"wrong crc32c", []uploader.WriterOption{uploader.WithSendCRC32C(crc ^ 1)}, false},
			{"wrong md5", []uploader.WriterOption{uploader.WithSendMD5(make([]byte, 16))}, false},
			{"wrong crc32c without per-message crcs", []uploader.WriterOption{experimental.WithoutCRC32C(), uploader.WithSendCRC32C(crc ^ 1)}, false},
		}
		for _, tc := range tests {
			name := "sums/" + tc.name + "/" + sizeName(size)
			a, err := e.c.Upload(context.Background(), bucket, name, bytes.NewReader(data), tc.opts...)
			if tc.ok {
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !bytes.Equal(a.MD5, sum[:]) {
					t.Fatalf("%s: stored MD5 %x, want %x", name, a.MD5, sum)
				}
				sameBytes(t, name, e.content(name), data)
				continue
			}
			if uploader.CodeOf(err) != codes.DataLoss {
				t.Fatalf("%s: %v, want DATA_LOSS", name, err)
			}
			e.absent(name)
		}
	}
}

// TestCodeOfAndErrorsIs: CodeOf reads the code of any error, and errors.Is
// matches the standard sentinels for the common cases.
func TestCodeOfAndErrorsIs(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, err := e.c.Upload(ctx, "no-such-bucket", "o", bytes.NewReader([]byte("x")))
	if uploader.CodeOf(err) != codes.NotFound || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("unknown bucket: %v (code %v)", err, uploader.CodeOf(err))
	}
	e.srv.FailCall("WriteObject", 1, codes.PermissionDenied)
	_, err = e.c.Upload(ctx, bucket, "o", bytes.NewReader([]byte("x")))
	if uploader.CodeOf(err) != codes.PermissionDenied || !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("permission denied: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = e.c.Upload(cctx, bucket, "o", bytes.NewReader([]byte("x")))
	if uploader.CodeOf(err) != codes.Canceled || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if c := uploader.CodeOf(nil); c != codes.OK {
		t.Fatalf("CodeOf(nil) = %v", c)
	}
	if c := uploader.CodeOf(errors.New("plain")); c != codes.Unknown {
		t.Fatalf("CodeOf(plain) = %v", c)
	}
	if errors.Is(err, fs.ErrNotExist) {
		t.Fatal("a cancelled upload matches fs.ErrNotExist")
	}
}
