package fakes_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/objup/objup/fakes"
)

// rawCall makes the unary storage v2 call method with the request whose
// protobuf encoding is req, and returns the response's.
func rawCall(ctx context.Context, cc *grpc.ClientConn, method string, req []byte) ([]byte, error) {
	in, out := &emptypb.Empty{}, &emptypb.Empty{}
	in.ProtoReflect().SetUnknown(req)
	err := cc.Invoke(ctx, "/google.storage.v2.Storage/"+method, in, out)
	return out.ProtoReflect().GetUnknown(), err
}

// pb builds a protobuf message: pairs of a field number and a value, a
// string, a []byte (a message), an int or a bool.
func pb(fields ...any) []byte {
	var b []byte
	for i := 0; i+1 < len(fields); i += 2 {
		num := protowire.Number(fields[i].(int))
		switch v := fields[i+1].(type) {
		case string:
			b = protowire.AppendTag(b, num, protowire.BytesType)
			b = protowire.AppendString(b, v)
		case []byte:
			b = protowire.AppendTag(b, num, protowire.BytesType)
			b = protowire.AppendBytes(b, v)
		case int:
			b = protowire.AppendTag(b, num, protowire.VarintType)
			b = protowire.AppendVarint(b, uint64(v))
		case bool:
			b = protowire.AppendTag(b, num, protowire.VarintType)
			b = protowire.AppendVarint(b, protowire.EncodeBool(v))
		}
	}
	return b
}

// TestGRPCBucketMethods calls each storage v2 bucket and IAM method, and
// RewriteObject: once as it succeeds, on a missing resource (NotFound),
// with each precondition failing (FailedPrecondition; Aborted for a stale
// IAM etag), and under the retry test instructions return-503 and
// return-reset-connection (Unavailable), after which the same call
// succeeds.
func TestGRPCBucketMethods(t *testing.T) {
	const other = "projects/_/buckets/empty"
	missing := "projects/_/buckets/missing"
	rewrite := func(extra ...any) []byte {
		return pb(append([]any{2, bucketRes, 3, "obj", 24, "dst", 25, bucketRes}, extra...)...)
	}
	for _, tc := range []struct {
		name, method string // the retry test method, the gRPC one
		req, missing []byte
		pre          [][]byte // each with one failing precondition
		preCode      codes.Code
	}{
		{"storage.buckets.get", "GetBucket", pb(1, bucketRes), pb(1, missing), [][]byte{pb(1, bucketRes, 2, 99), pb(1, bucketRes, 3, 2)}, codes.FailedPrecondition},
		{"storage.buckets.insert", "CreateBucket", pb(1, "projects/p", 3, "new", 2, pb(7, "COLDLINE")), nil, nil, 0},
		{"storage.buckets.delete", "DeleteBucket", pb(1, other), pb(1, missing), [][]byte{pb(1, other, 2, 99), pb(1, other, 3, 1)}, codes.FailedPrecondition},
		{"storage.buckets.list", "ListBuckets", pb(1, "projects/p", 2, 1), nil, nil, 0},
		{"storage.buckets.patch", "UpdateBucket", pb(1, pb(1, bucketRes, 7, "COLDLINE"), 6, pb(1, "storage_class")), pb(1, pb(1, missing), 6, pb(1, "storage_class")),
			[][]byte{pb(1, pb(1, bucketRes), 6, pb(1, "storage_class"), 2, 99), pb(1, pb(1, bucketRes), 6, pb(1, "storage_class"), 3, 2)}, codes.FailedPrecondition},
		{"storage.buckets.lockRetentionPolicy", "LockBucketRetentionPolicy", pb(1, bucketRes, 2, 2), pb(1, missing, 2, 1), [][]byte{pb(1, bucketRes, 2, 99)}, codes.FailedPrecondition},
		{"storage.buckets.getIamPolicy", "GetIamPolicy", pb(1, bucketRes), pb(1, missing), nil, 0},
		{"storage.buckets.setIamPolicy", "SetIamPolicy", pb(1, bucketRes, 2, pb(4, pb(1, "roles/storage.objectViewer", 2, "allUsers"), 3, "CAE=")), pb(1, missing, 2, pb()),
			[][]byte{pb(1, bucketRes, 2, pb(3, "CAI="))}, codes.Aborted},
		{"storage.buckets.testIamPermissions", "TestIamPermissions", pb(1, bucketRes, 2, "storage.buckets.get"), pb(1, missing, 2, "storage.buckets.get"), nil, 0},
		{"storage.objects.rewrite", "RewriteObject", rewrite(), pb(2, bucketRes, 3, "missing", 24, "dst", 25, bucketRes),
			[][]byte{rewrite(7, 1), rewrite(9, 1), rewrite(11, 1), rewrite(13, 99), rewrite(8, 1), rewrite(10, 1), rewrite(14, 1)}, codes.FailedPrecondition},
	} {
		// setup starts a server whose test bucket has a retention policy
		// (metageneration 2) and the object "obj", and an empty bucket.
		setup := func(t *testing.T) (*fakes.Server, *grpc.ClientConn) {
			srv, cc := start(t)
			do(t, srv, "PATCH", "/storage/v1/b/"+bucket, []byte(`{"retentionPolicy":{"retentionPeriod":"60"}}`))
			do(t, srv, "POST", "/storage/v1/b?project=p", []byte(`{"name":"empty"}`))
			put(t, cc, "obj", []byte("object"))
			return srv, cc
		}
		t.Run(tc.name, func(t *testing.T) {
			t.Run("ok", func(t *testing.T) {
				_, cc := setup(t)
				if _, err := rawCall(ctxT(t), cc, tc.method, tc.req); err != nil {
					t.Fatal(err)
				}
			})
			if tc.missing != nil {
				t.Run("NotFound", func(t *testing.T) {
					_, cc := setup(t)
					_, err := rawCall(ctxT(t), cc, tc.method, tc.missing)
					wantCode(t, err, codes.NotFound)
				})
			}
			for i, req := range tc.pre {
				t.Run(fmt.Sprint("precondition-", i), func(t *testing.T) {
					_, cc := setup(t)
					_, err := rawCall(ctxT(t), cc, tc.method, req)
					wantCode(t, err, tc.preCode)
				})
			}
			for _, instr := range []string{"return-503", "return-reset-connection"} {
				t.Run(instr, func(t *testing.T) {
					srv, cc := setup(t)
					id := newRetryTest(t, srv, "GRPC", map[string][]string{tc.name: {instr}})
					_, err := rawCall(withTestID(ctxT(t), id), cc, tc.method, tc.req)
					wantCode(t, err, codes.Unavailable)
					completed(t, srv, id)
					if _, err := rawCall(withTestID(ctxT(t), id), cc, tc.method, tc.req); err != nil {
						t.Fatalf("retried: %v", err)
					}
				})
			}
		})
	}
}

// TestGRPCBucketsOfficialClient drives the bucket and IAM methods and
// RewriteObject through the official client over gRPC, and checks that
// the JSON API sees the same buckets.
func TestGRPCBucketsOfficialClient(t *testing.T) {
	srv, cc := start(t)
	c := officialBidi(t, srv)
	ctx := ctxT(t)
	b := c.Bucket("grpc-bucket")
	if err := b.Create(ctx, "p", &storage.BucketAttrs{StorageClass: "NEARLINE", Labels: map[string]string{"a": "1"}, VersioningEnabled: true}); err != nil {
		t.Fatal(err)
	}
	if err := b.Create(ctx, "p", nil); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("second create: %v", err)
	}
	attrs, err := b.Attrs(ctx)
	if err != nil || attrs.StorageClass != "NEARLINE" || attrs.Labels["a"] != "1" || !attrs.VersioningEnabled || attrs.MetaGeneration != 1 ||
		len(attrs.ACL) != 3 || attrs.Created.IsZero() {
		t.Fatalf("attrs %+v, %v", attrs, err)
	}
	up := storage.BucketAttrsToUpdate{StorageClass: "COLDLINE", RetentionPolicy: &storage.RetentionPolicy{RetentionPeriod: time.Hour}}
	up.SetLabel("b", "2")
	up.DeleteLabel("a")
	attrs, err = b.If(storage.BucketConditions{MetagenerationMatch: 1}).Update(ctx, up)
	if err != nil || attrs.StorageClass != "COLDLINE" || fmt.Sprint(attrs.Labels) != "map[b:2]" || attrs.MetaGeneration != 2 ||
		attrs.RetentionPolicy == nil || attrs.RetentionPolicy.RetentionPeriod != time.Hour || attrs.RetentionPolicy.IsLocked {
		t.Fatalf("after update: %+v, %v", attrs, err)
	}
	if err := b.If(storage.BucketConditions{MetagenerationMatch: 2}).LockRetentionPolicy(ctx); err != nil {
		t.Fatal(err)
	}
	var j bucketJSON
	do(t, srv, "GET", "/storage/v1/b/grpc-bucket", nil).decode(t, &j)
	if j.StorageClass != "COLDLINE" || j.RetentionPolicy == nil || !j.RetentionPolicy.IsLocked || j.Metageneration != "3" {
		t.Fatalf("over JSON: %+v", j)
	}
	if _, err := b.Update(ctx, storage.BucketAttrsToUpdate{RetentionPolicy: &storage.RetentionPolicy{}}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("removing a locked policy: %v", err)
	}

	// IAM.
	h := b.IAM()
	p, err := h.Policy(ctx)
	if err != nil || len(p.Roles()) != 2 {
		t.Fatalf("policy %v, %v", p, err)
	}
	p.Add("allUsers", "roles/storage.objectViewer")
	if err := h.SetPolicy(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := h.SetPolicy(ctx, p); status.Code(err) != codes.Aborted {
		t.Fatalf("set with a stale etag: %v", err)
	}
	if p, err = h.Policy(ctx); err != nil || !p.HasRole("allUsers", "roles/storage.objectViewer") {
		t.Fatalf("policy after set: %v, %v", p, err)
	}
	perms, err := h.TestPermissions(ctx, []string{"storage.objects.get"})
	if err != nil || fmt.Sprint(perms) != "[storage.objects.get]" {
		t.Fatalf("permissions %v, %v", perms, err)
	}

	// A rewrite into the new bucket, then listing and deleting.
	put(t, cc, "src", []byte("some content"))
	dst := b.Object("copied")
	cp := dst.CopierFrom(c.Bucket(bucket).Object("src"))
	cp.ContentType = "text/plain"
	oa, err := cp.Run(ctx)
	if err != nil || oa.Size != 12 || oa.ContentType != "text/plain" || oa.StorageClass != "COLDLINE" {
		t.Fatalf("rewrite: %+v, %v", oa, err)
	}
	var names []string
	it := c.Buckets(ctx, "p")
	for {
		ba, err := it.Next()
		if err != nil {
			break
		}
		names = append(names, ba.Name)
	}
	if fmt.Sprint(names) != "[fake-test grpc-bucket]" {
		t.Fatalf("buckets %v", names)
	}
	if err := b.Delete(ctx); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("delete of a bucket that is not empty: %v", err)
	}
	if err := dst.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	// The versioned bucket keeps the deleted object as a noncurrent
	// generation: delete it too.
	itv := b.Objects(ctx, &storage.Query{Versions: true})
	for {
		o, err := itv.Next()
		if err != nil {
			break
		}
		if err := b.Object(o.Name).Generation(o.Generation).Delete(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Attrs(ctx); !errors.Is(err, storage.ErrBucketNotExist) {
		t.Fatalf("after delete: %v", err)
	}
}

// TestGRPCRewriteSteps rewrites in calls of max_bytes_rewritten_per_call,
// with the token each answer gives.
func TestGRPCRewriteSteps(t *testing.T) {
	_, cc := start(t)
	data := payload(2*mib+3, 5)
	put(t, cc, "src", data)
	var token string
	for calls := 1; ; calls++ {
		req := pb(2, bucketRes, 3, "src", 24, "dst", 25, bucketRes, 15, mib)
		if token != "" {
			req = append(req, pb(5, token)...)
		}
		resp, err := rawCall(ctxT(t), cc, "RewriteObject", req)
		if err != nil {
			t.Fatal(err)
		}
		var done, total int
		token = ""
		var resource bool
		for len(resp) > 0 {
			num, typ, n := protowire.ConsumeTag(resp)
			resp = resp[n:]
			switch typ {
			case protowire.VarintType:
				v, n := protowire.ConsumeVarint(resp)
				resp = resp[n:]
				switch num {
				case 1:
					total = int(v)
				case 3:
					done = int(v)
				}
			case protowire.BytesType:
				v, n := protowire.ConsumeBytes(resp)
				resp = resp[n:]
				switch num {
				case 4:
					token = string(v)
				case 5:
					resource = true
				}
			}
		}
		if done == 1 {
			if calls != 3 || total != len(data) || !resource {
				t.Fatalf("done after %d calls, %d bytes, resource %v", calls, total, resource)
			}
			break
		}
		if total != calls*mib || token == "" {
			t.Fatalf("call %d: %d bytes, token %q", calls, total, token)
		}
		absent(t, cc, "dst")
	}
	sameBytes(t, "rewritten", get(t, cc, "dst"), data)
	_, err := rawCall(ctxT(t), cc, "RewriteObject", pb(2, bucketRes, 3, "src", 24, "dst", 25, bucketRes, 15, 1000))
	wantCode(t, err, codes.InvalidArgument)
	_, err = rawCall(ctxT(t), cc, "RewriteObject", pb(2, bucketRes, 3, "src", 24, "dst", 25, bucketRes, 27, "key"))
	wantCode(t, err, codes.Unimplemented)
	_, err = rawCall(ctxT(t), cc, "UpdateBucket", pb(1, pb(1, bucketRes), 6, pb(1, "lifecycle")))
	wantCode(t, err, codes.Unimplemented)
	_, err = rawCall(ctxT(t), cc, "LockBucketRetentionPolicy", pb(1, bucketRes))
	wantCode(t, err, codes.InvalidArgument)
}
