package fakes

import (
	"sync"
)

// readBufs holds maxChunk buffers for ReadObject. grpc-go marshals a message
// before SendMsg returns, so a buffer is free again once Send returned.
var readBufs = sync.Pool{New: func() any { b := make([]byte, maxChunk); return &b }}

const (
	defaultPageSize = 1000
	maxPageSize     = 1000
)
