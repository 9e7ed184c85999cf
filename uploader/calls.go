package uploader

import (
	"context"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/internal/wire"
	"github.com/objup/objup/uploader/internal/names"
	"github.com/objup/objup/uploader/internal/retry"
	"github.com/objup/objup/uploader/internal/xfer"
)

// The client's own calls, apart from any Writer: a look-up, a cancel, a
// delete.

// call returns a request to gs://bucket/object for one call of the
// client's own (a look-up, a cancel, a delete), and its retry engine.
func (c *Client) call(ctx context.Context, bucket, object string) (*xfer.Request, *retry.Engine) {
	u := &xfer.Request{Target: xfer.Target{Ctx: ctx, Bucket: bucket, Object: object, Params: "bucket=" + bucketPrefix + bucket}}
	r := new(retry.Engine)
	r.Init(&c.retry.Config, c.newCallEvents(&u.Target, nil))
	return u, r
}

// getObject returns the live object gs://bucket/object.
func (c *Client) getObject(ctx context.Context, bucket, object string) (*wire.Object, error) {
	u, r := c.call(ctx, bucket, object)
	var o *wire.Object
	op, err := r.Do(ctx, "GetObject", true, nil, func() (string, bool, error) {
		var err error
		o, err = c.tr.GetObject(u, object, r.AttemptTimeout())
		return "", true, err
	})
	if err != nil {
		return nil, newError(op, bucket, object, err)
	}
	return o, nil
}

// Attrs returns the attributes of the live object gs://bucket/object. A
// missing object is a NotFound error that matches fs.ErrNotExist.
func (c *Client) Attrs(ctx context.Context, bucket, object string) (*ObjectAttrs, error) {
	if err := c.checkCall("Attrs", ctx, bucket, object); err != nil {
		return nil, err
	}
	o, err := c.getObject(ctx, bucket, object)
	if err != nil {
		return nil, err
	}
	a := new(ObjectAttrs)
	a.setFromObject(o)
	return a, nil
}

// checkCall checks the input of a call of the client's own.
func (c *Client) checkCall(op string, ctx context.Context, bucket, object string) error {
	switch {
	case ctx == nil:
		return invalid(op, bucket, object, "nil context")
	case names.Bucket(bucket) != nil:
		return invalid(op, bucket, object, "%w", names.Bucket(bucket))
	case names.Object(object) != nil:
		return invalid(op, bucket, object, "%w", names.Object(object))
	}
	if err := c.closedErr(); err != nil {
		return &Error{Op: op, Bucket: bucket, Object: object, Code: codes.Canceled, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return newError(op, bucket, object, err)
	}
	return nil
}
