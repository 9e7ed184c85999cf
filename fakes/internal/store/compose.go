package store

import (
	"github.com/objup/objup/internal/crc32c"
)

// MaxComposeSources is the most source objects one compose takes, as on
// GCS.
const MaxComposeSources = 32

// Source is one source object of a compose: its name, its
// generation (0: the live one) and its ifGenerationMatch, if any.
type Source struct {
	Name    string
	Gen     int64
	IfMatch *int64
}

// Compose stores, as name in bucket b with the attributes a and the
// destination's preconditions cond, the sources' content one after the
// other, as GCS does: 1 to 32 sources of the bucket, each at its live
// generation or the one named and with its own ifGenerationMatch; a CRC32C
// combined from the sources' (no content is read again, and none is
// copied: the parts are shared); no MD5; a component count that adds up
// the sources'.
func (b *Bucket) Compose(name string, a Attrs, srcs []Source, cond *Conditions, tenant string) (*Object, error) {
	if n := len(srcs); n == 0 || n > MaxComposeSources {
		return nil, Errorf(KindInvalid, "a compose takes 1 to %d source objects, not %d", MaxComposeSources, n)
	}
	var c Content
	var components int64
	for i, src := range srcs {
		if src.Name == "" {
			return nil, Errorf(KindInvalid, "source object %d has no name", i)
		}
		o, err := b.Get(src.Name, src.Gen)
		if err != nil {
			return nil, err
		}
		if src.IfMatch != nil && o.generation != *src.IfMatch {
			return nil, Errorf(KindPrecondition, "source object %q: ifGenerationMatch %d, but the generation is %d", src.Name, *src.IfMatch, o.generation)
		}
		if b.store.disk != nil {
			c.objs = append(c.objs, o)
		} else {
			c.Parts = append(c.Parts, o.content...)
		}
		c.CRC32C = crc32c.Combine(c.CRC32C, o.crc32c, o.size)
		c.Size += o.size
		components += max(o.ComponentCount(), 1)
	}
	ex := Extra{}
	if a.Extra != nil {
		ex = *a.Extra
	}
	ex.Components = components
	a.Extra = &ex
	return b.Put(name, a, c, cond, tenant)
}
