package store

import (
	"encoding/base64"
	"strconv"
	"strings"
)

// ListQuery is a list request, the same for both APIs.
type ListQuery struct {
	Prefix, Delimiter        string
	StartOffset, EndOffset   string // names in [startOffset, endOffset); "" means unbounded
	IncludeTrailingDelimiter bool
	Versions                 bool
	PageSize                 int
	Token                    string // a page token from an earlier page
}

// ListPage is one page of a listing.
type ListPage struct {
	Objects  []*Object
	Prefixes []string
	Next     string // the next page's token; "" on the last page
}

// PageToken is where a listing resumes: at the entry (name, gen), included.
// It is opaque to clients: base64url of "GEN:NAME".
func PageToken(name string, gen int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(gen, 10) + ":" + name))
}

// ParsePageToken returns the entry a page token names; false if the token
// is not one PageToken made.
func ParsePageToken(t string) (string, int64, bool) {
	b, err := base64.RawURLEncoding.DecodeString(t)
	if err != nil {
		return "", 0, false
	}
	g, name, ok := strings.Cut(string(b), ":")
	gen, err := strconv.ParseInt(g, 10, 64)
	if !ok || err != nil || gen < 0 {
		return "", 0, false
	}
	return name, gen, true
}

// prefixEnd returns the smallest string greater than every string that
// starts with p, or "" if there is none.
func prefixEnd(p string) string {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}

// List returns one page of the bucket's objects in name order (then
// generation), with the names that the delimiter rolls up reported once as
// prefixes. Objects and prefixes count together towards the page size. The
// cost is that of the entries returned, plus one index seek per prefix: it
// does not grow with the size of the bucket.
func (b *Bucket) List(q *ListQuery) (*ListPage, error) {
	start := max(q.Prefix, q.StartOffset)
	var startGen int64
	if q.Token != "" {
		name, gen, ok := ParsePageToken(q.Token)
		if !ok {
			return nil, Errorf(KindInvalid, "page token %q is not one this server issued", q.Token)
		}
		if name > start || name == start && gen > startGen {
			start, startGen = name, gen
		}
	}
	page := &ListPage{}
	entries := 0
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.deleted {
		return nil, ErrBucketNotFound(b.name)
	}
	for {
		// Each pass walks the index from (start, startGen) until the page
		// is full, the names leave the range, or the delimiter rolls up a
		// prefix, after which the next pass seeks past that prefix.
		var (
			skipTo string
			done   = true
		)
		err := b.ascend(start, startGen, func(o *Object) bool {
			if !strings.HasPrefix(o.name, q.Prefix) || q.EndOffset != "" && o.name >= q.EndOffset {
				return false
			}
			if !q.Versions && !o.Live() {
				return true
			}
			if q.Delimiter != "" {
				if i := strings.Index(o.name[len(q.Prefix):], q.Delimiter); i >= 0 {
					p := o.name[:len(q.Prefix)+i+len(q.Delimiter)]
					if entries == q.PageSize {
						page.Next = PageToken(o.name, o.generation)
						return false
					}
					entries++
					page.Prefixes = append(page.Prefixes, p)
					if q.IncludeTrailingDelimiter && o.name == p {
						// The object named like the prefix is listed too;
						// with versions, all its generations are.
						b.ascend(o.name, o.generation, func(o2 *Object) bool {
							if o2.name != p {
								return false
							}
							if q.Versions || o2.Live() {
								page.Objects = append(page.Objects, o2)
							}
							return true
						})
					}
					skipTo, done = prefixEnd(p), false
					return false
				}
			}
			if entries == q.PageSize {
				page.Next = PageToken(o.name, o.generation)
				return false
			}
			entries++
			page.Objects = append(page.Objects, o)
			return true
		})
		if err != nil {
			return nil, err
		}
		if done || skipTo == "" {
			return page, nil
		}
		start, startGen = skipTo, 0
	}
}
