package calls

import (
	"testing"

	"google.golang.org/grpc/codes"
)

// BenchmarkCallLogAdd measures what recording one call costs the call: a
// copy into the ring and a counter increment under one mutex, from every
// CPU at once.
func BenchmarkCallLogAdd(b *testing.B) {
	var l CallLog
	l.Init(10000)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		c := &Call{Method: "WriteObject", Tenant: "tenant-7", Bucket: "bucket", Object: "some/object/name", Code: codes.OK}
		for pb.Next() {
			l.Add(c)
		}
	})
}
