package tree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// ObjectName returns the name of the object a file at rel (its path
// relative to the uploaded directory, slash-separated) gets under prefix:
// prefix + "/" + rel, with no second slash when prefix is empty or ends
// in "/".
func ObjectName(prefix, rel string) string {
	switch {
	case prefix == "":
		return rel
	case strings.HasSuffix(prefix, "/"):
		return prefix + rel
	}
	return prefix + "/" + rel
}

// checkBucket checks a bucket name as GCS does, in short: 3 to 222
// characters, lowercase letters, digits, '-', '_' and '.', starting and
// ending with a letter or digit.
func checkBucket(name string) error {
	n := len(name)
	if n == 0 {
		return errors.New("tree: empty bucket name")
	}
	if n < 3 || n > 222 {
		return fmt.Errorf("tree: bucket name %q must have 3 to 222 characters", name)
	}
	for i := range n {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' || c == '_' || c == '.':
			if i == 0 || i == n-1 {
				return fmt.Errorf("tree: bucket name %q must start and end with a letter or digit", name)
			}
		default:
			return fmt.Errorf("tree: bucket name %q has %q: only lowercase letters, digits, '-', '_' and '.' are allowed", name, c)
		}
	}
	return nil
}

// checkPrefix checks an object name prefix: valid UTF-8, no carriage
// return, line feed or NUL, no leading "/", no "." or ".." segment, at
// most 1024 bytes.
func checkPrefix(prefix string) error {
	switch {
	case len(prefix) > 1024:
		return fmt.Errorf("tree: prefix has %d bytes, more than the 1024 of an object name", len(prefix))
	case !utf8.ValidString(prefix):
		return fmt.Errorf("tree: prefix %q is not valid UTF-8", prefix)
	case strings.ContainsAny(prefix, "\r\n\x00"):
		return fmt.Errorf("tree: prefix %q contains a carriage return, line feed or NUL", prefix)
	case strings.HasPrefix(prefix, "/"):
		return fmt.Errorf("tree: prefix %q starts with \"/\"", prefix)
	case strings.Contains(prefix, "//"):
		return fmt.Errorf("tree: prefix %q has an empty segment (\"//\")", prefix)
	}
	for seg := range strings.SplitSeq(strings.TrimSuffix(prefix, "/"), "/") {
		if seg == "." || seg == ".." {
			return fmt.Errorf("tree: prefix %q has a %q segment", prefix, seg)
		}
	}
	return nil
}

// checkObject checks an object name as GCS does.
func checkObject(name string) error {
	switch {
	case name == "":
		return errors.New("empty object name")
	case len(name) > 1024:
		return fmt.Errorf("object name has %d bytes, more than 1024", len(name))
	case !utf8.ValidString(name):
		return fmt.Errorf("object name %q is not valid UTF-8", name)
	case name == "." || name == "..":
		return fmt.Errorf("object name %q is not allowed", name)
	case strings.ContainsAny(name, "\r\n"):
		return fmt.Errorf("object name %q contains a carriage return or line feed", name)
	}
	return nil
}

// file is a regular file the walk found.
type file struct {
	path   string // to open
	rel    string // relative to the directory, slash-separated: the manifest's key
	object string
	size   int64
}

// walker walks a directory.
type walker struct {
	root    string
	prefix  string
	follow  bool
	filter  func(rel string, isDir bool) bool
	files   []file
	skipped []Event // links left out, cycles
	bytes   int64
}

// walk lists the regular files under root.
func (w *walker) walk() error {
	fi, err := os.Stat(w.root)
	if err != nil {
		return fmt.Errorf("tree: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("tree: %s is not a directory", w.root)
	}
	return w.dir(w.root, "", []os.FileInfo{fi})
}

// dir lists the directory at path, rel from the root, whose ancestors
// (itself last) are given.
func (w *walker) dir(path, rel string, ancestors []os.FileInfo) error {
	ents, err := os.ReadDir(path)
	if err != nil {
		return fmt.Errorf("tree: %w", err)
	}
	for _, e := range ents {
		p := filepath.Join(path, e.Name())
		r := e.Name()
		if rel != "" {
			r = rel + "/" + e.Name()
		}
		mode := e.Type()
		var fi os.FileInfo
		if mode&fs.ModeSymlink != 0 {
			if !w.follow {
				w.skipped = append(w.skipped, Event{Kind: Skipped, Path: r, Reason: SkipSymlink})
				continue
			}
			fi, err = os.Stat(p)
			if err != nil {
				// A dangling link: nothing to upload, as gcloud and rsync say.
				w.skipped = append(w.skipped, Event{Kind: Skipped, Path: r, Reason: SkipSymlink, Err: err})
				continue
			}
			mode = fi.Mode().Type()
		}
		switch {
		case mode.IsDir():
			if w.filter != nil && !w.filter(r, true) {
				continue
			}
			if fi == nil {
				if fi, err = e.Info(); err != nil {
					return fmt.Errorf("tree: %w", err)
				}
			}
			if cycle(fi, ancestors) {
				w.skipped = append(w.skipped, Event{Kind: Skipped, Path: r, Reason: SkipCycle})
				continue
			}
			if err := w.dir(p, r, append(ancestors[:len(ancestors):len(ancestors)], fi)); err != nil {
				return err
			}
		case mode.IsRegular():
			if w.filter != nil && !w.filter(r, false) {
				continue
			}
			if fi == nil {
				if fi, err = e.Info(); err != nil {
					return fmt.Errorf("tree: %w", err)
				}
			}
			w.files = append(w.files, file{path: p, rel: r, object: ObjectName(w.prefix, r), size: fi.Size()})
			w.bytes += fi.Size()
		}
	}
	return nil
}

// cycle reports whether the directory fi is one of ancestors.
func cycle(fi os.FileInfo, ancestors []os.FileInfo) bool {
	for _, a := range ancestors {
		if os.SameFile(fi, a) {
			return true
		}
	}
	return false
}
