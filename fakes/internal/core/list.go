package core

import (
	"sync"
)

// readBufs holds maxChunk buffers for ReadObject. grpc-go marshals a message
// before SendMsg returns, so a buffer is free again once Send returned.
var ReadBufs = sync.Pool{New: func() any { b := make([]byte, MaxChunk); return &b }}

const (
	DefaultPageSize = 1000
	MaxPageSize     = 1000
)
