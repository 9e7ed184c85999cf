package header

import (
	"context"

	"google.golang.org/grpc/metadata"
)

// Flatten is flatten, for the package's external tests.
func Flatten(ctx context.Context, extra ...string) metadata.MD { return flatten(ctx, extra...) }
