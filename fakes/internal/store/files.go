package store

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Content kept in files by the store's caller, for a store on disk: the
// parts of an XML API multipart upload, which live in files of their own
// until the upload is completed, and which Put then copies into the store
// (inline up to InlineMax, else into a blob of the object's own, with
// copy_file_range where the kernel has it), so that an object of any size
// is stored without its bytes passing through memory.

// FilePart is the first Size bytes of the file at Path.
type FilePart struct {
	Path string
	Size int64
}

// FileContent returns the content made of the files' bytes one after the
// other, size bytes in all, whose CRC32C is crc, with no MD5. Only a store
// on disk takes it (Put answers KindInternal otherwise). Put has copied the
// bytes once it returns: the caller may then remove the files.
func FileContent(files []FilePart, size int64, crc uint32) Content {
	return Content{Size: size, CRC32C: crc, files: files}
}

// writeFiles writes the bytes of files to w, one file after the other.
func writeFiles(w io.Writer, files []FilePart) error {
	for _, f := range files {
		src, err := os.Open(f.Path)
		if err != nil {
			return err
		}
		n, err := io.Copy(w, io.LimitReader(src, f.Size))
		src.Close()
		if err == nil && n != f.Size {
			err = fmt.Errorf("%s: %d bytes, want %d", f.Path, n, f.Size)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Dir returns the directory name under the store's own directory,
// created if needed, for a caller that keeps files of its own beside the
// store (multipart uploads); "" for a store in memory.
func (s *Store) Dir(name string) (string, error) {
	if s.disk == nil {
		return "", nil
	}
	p := filepath.Join(s.disk.dir, name)
	return p, os.MkdirAll(p, 0o755)
}
