package main

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/objup/objup/uploader"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// object is one object of the run: its name and, once its upload has read
// the content to the end, the size and CRC32C of what was read. The
// verification compares the stored objects with those.
type object struct {
	name string
	path string // the file, with -dir

	read     int64
	crc      uint32
	complete bool // the content was read to io.EOF
}

// fileProblem is a file of -dir that is not uploaded: unreadable directory,
// name that GCS does not accept.
type fileProblem struct {
	path string
	err  error
}

// batch is what one run uploads: the items for UploadMany and, in the same
// order, the objects they fill in.
type batch struct {
	items   []uploader.Item
	objects []object
	// maxSize is the largest object, known before the upload: it sizes the
	// -buffers caller buffers.
	maxSize int64
	// With -dir: files that could not be turned into items, and entries
	// skipped because they are not regular files.
	problems []fileProblem
	skipped  []string
}

// generate builds n items whose sizes and contents follow from seed: item i
// always has the same size and bytes for the same seed, min and max. The
// content is produced on demand as the uploader reads it (Item.Open), so the
// program never holds the objects in memory.
func generate(n int, minSize, maxSize int64, seed uint64, prefix string) *batch {
	b := &batch{items: make([]uploader.Item, n), objects: make([]object, n)}
	width := max(6, len(fmt.Sprint(n-1)))
	for i := range n {
		size := minSize + rand.New(rand.NewPCG(seed, uint64(i))).Int64N(maxSize-minSize+1)
		b.maxSize = max(b.maxSize, size)
		obj := &b.objects[i]
		obj.name = fmt.Sprintf("%sobj-%0*d", prefix, width, i)
		b.items[i] = uploader.Item{
			Name: obj.name,
			Open: func() (io.ReadCloser, error) {
				g := &genReader{left: size}
				g.rng.Seed(seed^contentSalt, uint64(i))
				return &checkReader{r: g, obj: obj}, nil
			},
		}
	}
	return b
}

// contentSalt separates the content streams from the size streams.
const contentSalt = 0x9e3779b97f4a7c15

// genReader produces left pseudo-random bytes: the little-endian words of a
// PCG stream. The bytes do not depend on how the reads are sized.
type genReader struct {
	rng   rand.PCG
	left  int64
	word  uint64 // bytes of the current word not yet returned, low first
	nword int
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > g.left {
		p = p[:g.left]
	}
	n := 0
	for ; n < len(p) && g.nword > 0; n++ {
		p[n] = byte(g.word)
		g.word >>= 8
		g.nword--
	}
	for ; n+8 <= len(p); n += 8 {
		binary.LittleEndian.PutUint64(p[n:], g.rng.Uint64())
	}
	if n < len(p) {
		g.word, g.nword = g.rng.Uint64(), 8
		for ; n < len(p); n++ {
			p[n] = byte(g.word)
			g.word >>= 8
			g.nword--
		}
	}
	g.left -= int64(n)
	return n, nil
}

// checkReader counts and checksums what the uploader reads, and records both
// in obj when the content ends.
type checkReader struct {
	r   io.Reader
	c   io.Closer // nil for generated content
	obj *object
	n   int64
	crc uint32
}

func (r *checkReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.crc = crc32.Update(r.crc, castagnoli, p[:n])
		r.n += int64(n)
	}
	if err == io.EOF {
		r.obj.read, r.obj.crc, r.obj.complete = r.n, r.crc, true
	}
	return n, err
}

func (r *checkReader) Close() error {
	if r.c == nil {
		return nil
	}
	return r.c.Close()
}

// walk builds one item per regular file under root (symbolic links to files
// are followed), named prefix + the path relative to root with '/'
// separators, in lexical order. It keeps going past problems: a directory it
// cannot read or a name GCS does not accept is recorded in problems; a
// symbolic link whose target is gone still becomes an item, whose Open then
// fails and is reported with the item's result; other entries (directories
// behind links, devices, sockets, pipes) are skipped.
func walk(root, prefix string) (*batch, error) {
	b := &batch{}
	// Walk the directory a link given as root points to.
	root, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, err
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root {
				return err
			}
			b.problems = append(b.problems, fileProblem{path, err})
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		var size int64
		switch t := d.Type(); {
		case t.IsRegular():
			fi, err := d.Info()
			if err != nil {
				b.problems = append(b.problems, fileProblem{path, err})
				return nil
			}
			size = fi.Size()
		case t&fs.ModeSymlink != 0:
			fi, err := os.Stat(path)
			if err == nil && !fi.Mode().IsRegular() {
				b.skipped = append(b.skipped, path)
				return nil
			}
			if err == nil {
				size = fi.Size()
			}
			// A dangling link: its Open fails, reported per file.
		default:
			b.skipped = append(b.skipped, path)
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			b.problems = append(b.problems, fileProblem{path, err})
			return nil
		}
		name := prefix + filepath.ToSlash(rel)
		if err := checkName(name); err != nil {
			b.problems = append(b.problems, fileProblem{path, err})
			return nil
		}
		b.maxSize = max(b.maxSize, size)
		b.objects = append(b.objects, object{name: name, path: path})
		return nil
	})
	if err != nil {
		return nil, err
	}
	b.items = make([]uploader.Item, len(b.objects))
	for i := range b.objects {
		obj := &b.objects[i]
		b.items[i] = uploader.Item{
			Name: obj.name,
			Open: func() (io.ReadCloser, error) {
				f, err := os.Open(obj.path)
				if err != nil {
					return nil, err
				}
				return &checkReader{r: f, c: f, obj: obj}, nil
			},
		}
	}
	return b, nil
}

// checkName applies the GCS object naming rules that a file name can break.
// UploadMany checks them too, but rejects the whole batch for one bad name.
func checkName(name string) error {
	switch {
	case !utf8.ValidString(name):
		return fmt.Errorf("object name %q is not valid UTF-8", name)
	case len(name) > 1024:
		return fmt.Errorf("object name of %d bytes: GCS allows 1024", len(name))
	case strings.ContainsAny(name, "\r\n"):
		return fmt.Errorf("object name %q has a carriage return or line feed", name)
	case strings.HasPrefix(name, ".well-known/acme-challenge/"):
		return fmt.Errorf("object name %q is reserved", name)
	}
	return nil
}
