package grpcfront

import (
	"encoding/json"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/objup/objup/fakes/internal/api"
	"github.com/objup/objup/fakes/internal/core"
	"github.com/objup/objup/fakes/internal/store"
)

// iamResource reads the resource (1) of an IAM request: a bucket.
func (s *Server) iamBucket(ss grpc.ServerStream, res string) (*store.Bucket, error) {
	if strings.Contains(strings.TrimPrefix(res, api.BucketPrefix), "/") {
		return nil, status.Errorf(codes.InvalidArgument, "fakes: IAM policies are the fake's on buckets, not %q", res)
	}
	return s.bucketNamed(ss.Context(), res)
}

// grpcGetIamPolicy serves GetIamPolicy (google.iam.v1): resource (1).
func (s *Server) grpcGetIamPolicy(ss grpc.ServerStream) error {
	var res string
	if err := unary(ss, methodGetIamPolicy, func(f field) error {
		if f.num == 1 && f.typ == protowire.BytesType {
			res = string(f.b)
		}
		return nil
	}); err != nil {
		return err
	}
	b, err := s.iamBucket(ss, res)
	if err != nil {
		return err
	}
	p, err := b.Policy()
	if err != nil {
		return err
	}
	return sendRaw(ss, appendPolicy(nil, p))
}

// grpcSetIamPolicy serves SetIamPolicy: resource (1) and policy (2:
// version 1, bindings 4 of role 1, members 2 and condition 3, etag 3,
// which, if set, must be the policy's).
func (s *Server) grpcSetIamPolicy(ss grpc.ServerStream) error {
	var res, etag string
	var p store.Policy
	if err := unary(ss, methodSetIamPolicy, func(f field) error {
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			res = string(f.b)
		case f.num == 2 && f.typ == protowire.BytesType:
			return eachField(f.b, func(f field) error {
				switch {
				case f.num == 1 && f.typ == protowire.VarintType:
					p.Version = int64(int32(f.v))
				case f.num == 3 && f.typ == protowire.BytesType:
					etag = string(f.b)
				case f.num == 4 && f.typ == protowire.BytesType:
					bd, err := decodeBinding(f.b)
					if err == nil && len(bd.Members) > 0 {
						p.Bindings = append(p.Bindings, bd)
					}
					return err
				}
				return nil
			})
		}
		return nil
	}); err != nil {
		return err
	}
	if p.Version < 0 || p.Version > 3 {
		return status.Errorf(codes.InvalidArgument, "fakes: policy version %d is not 1 to 3", p.Version)
	}
	b, err := s.iamBucket(ss, res)
	if err != nil {
		return err
	}
	out, err := b.SetPolicy(p, etag)
	if err != nil {
		if e, ok := err.(*store.Error); ok && e.Kind == store.KindPrecondition {
			return status.Error(codes.Aborted, e.Msg) // IAM's code for a stale etag
		}
		return err
	}
	return sendRaw(ss, appendPolicy(nil, out))
}

// grpcTestIamPermissions serves TestIamPermissions: resource (1) and
// permissions (2); every storage permission asked for is granted, but to
// a caller held to a role (granted).
func (s *Server) grpcTestIamPermissions(ss grpc.ServerStream) error {
	var res string
	var perms []string
	if err := unary(ss, methodTestIamPermissions, func(f field) error {
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			res = string(f.b)
		case f.num == 2 && f.typ == protowire.BytesType:
			perms = append(perms, string(f.b))
		}
		return nil
	}); err != nil {
		return err
	}
	for _, p := range perms {
		if !strings.HasPrefix(p, "storage.") {
			return status.Errorf(codes.InvalidArgument, "fakes: permission %q is not a storage permission", p)
		}
	}
	if _, err := s.iamBucket(ss, res); err != nil {
		return err
	}
	var out []byte
	for _, p := range core.Granted(ss.Context(), perms) {
		out = appendBytesField(out, 1, []byte(p))
	}
	return sendRaw(ss, out)
}

// appendPolicy appends the encoding of p, a google.iam.v1.Policy:
// version 1, etag 3, bindings 4 (role 1, members 2, condition 3, a
// google.type.Expr: expression 1, title 2, description 3, location 4).
func appendPolicy(out []byte, p *store.Policy) []byte {
	out = appendVarintField(out, 1, uint64(p.Version))
	out = appendBytesField(out, 3, []byte(p.Etag))
	for _, bd := range p.Bindings {
		var m []byte
		m = appendBytesField(m, 1, []byte(bd.Role))
		for _, mem := range bd.Members {
			m = appendBytesField(m, 2, []byte(mem))
		}
		if bd.Condition != "" {
			var c struct{ Expression, Title, Description, Location string }
			json.Unmarshal([]byte(bd.Condition), &c)
			var e []byte
			for i, v := range []string{c.Expression, c.Title, c.Description, c.Location} {
				if v != "" {
					e = appendBytesField(e, protowire.Number(i+1), []byte(v))
				}
			}
			m = protowire.AppendTag(m, 3, protowire.BytesType)
			m = protowire.AppendBytes(m, e)
		}
		out = protowire.AppendTag(out, 4, protowire.BytesType)
		out = protowire.AppendBytes(out, m)
	}
	return out
}

// decodeBinding reads an encoded google.iam.v1.Binding.
func decodeBinding(b []byte) (store.Binding, error) {
	var bd store.Binding
	err := eachField(b, func(f field) error {
		switch {
		case f.typ != protowire.BytesType:
		case f.num == 1:
			bd.Role = string(f.b)
		case f.num == 2:
			bd.Members = append(bd.Members, string(f.b))
		case f.num == 3:
			var c [4]string
			if err := eachField(f.b, func(f field) error {
				if f.num >= 1 && f.num <= 4 && f.typ == protowire.BytesType {
					c[f.num-1] = string(f.b)
				}
				return nil
			}); err != nil {
				return err
			}
			raw, _ := json.Marshal(map[string]string{"expression": c[0], "title": c[1], "description": c[2], "location": c[3]})
			bd.Condition = string(raw)
		}
		return nil
	})
	if err == nil && bd.Role == "" {
		err = status.Error(codes.InvalidArgument, "fakes: a policy binding needs a role")
	}
	return bd, err
}
