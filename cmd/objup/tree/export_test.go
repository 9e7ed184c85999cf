package tree

import "path/filepath"

// RecordStart appends to the manifest of (dir, bucket, prefix) in
// journalDir the start record a killed run leaves: a write of the file at
// rel, of size bytes and modification time mtime, under the precondition
// ifGen, went out and no done record followed.
func RecordStart(journalDir, dir, bucket, prefix, rel string, size, mtime, ifGen int64) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	m, err := openManifest(journalDir, record{Dir: abs, Bucket: bucket, Prefix: prefix})
	if err != nil {
		return err
	}
	if err := m.append(record{Op: opStart, Path: rel, Size: size, MTime: mtime, IfGen: ifGen}); err != nil {
		_ = m.close(false)
		return err
	}
	return m.close(false)
}

// ManifestPath returns the path of the manifest of (dir, bucket, prefix)
// in journalDir.
func ManifestPath(journalDir, dir, bucket, prefix string) string {
	abs, _ := filepath.Abs(dir)
	return filepath.Join(journalDir, manifestName(record{Dir: abs, Bucket: bucket, Prefix: prefix})+".jsonl")
}
