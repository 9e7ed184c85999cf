package tree

import (
	"fmt"
	"time"

	"github.com/objup/objup/uploader"
)

// EventKind says what an Event reports.
type EventKind int

// The kinds of Event.
const (
	// Walked: the walk is over; Files and Size are the files found and
	// their total size. It comes once, before any other event but the
	// Skipped events of links left out.
	Walked EventKind = iota + 1
	// Started: the file's upload begins (Resumed: it continues an earlier
	// run's upload; Err: the service refused to continue an earlier run's
	// upload, which was abandoned, and the file is sent anew).
	Started
	// Progressed: the service holds Bytes bytes of the file.
	Progressed
	// Done: the file is stored (Attrs), by this run or, when Found, by an
	// earlier one that could not record it.
	Done
	// Skipped: the file was not sent (Reason).
	Skipped
	// Failed: the file's upload failed (Err).
	Failed
)

// String returns the kind's name.
func (k EventKind) String() string {
	switch k {
	case Walked:
		return "walked"
	case Started:
		return "started"
	case Progressed:
		return "progressed"
	case Done:
		return "done"
	case Skipped:
		return "skipped"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// SkipReason says why a file was not sent.
type SkipReason string

// The reasons a Skipped event gives.
const (
	// SkipUnchanged: the manifest records the file stored, and it has not
	// changed since.
	SkipUnchanged SkipReason = "unchanged"
	// SkipExists: Options.SkipExisting, and the object exists.
	SkipExists SkipReason = "exists"
	// SkipSymlink: a symbolic link, left out (not Options.FollowSymlinks),
	// or one that points nowhere (Err says why).
	SkipSymlink SkipReason = "symlink"
	// SkipCycle: a followed link to a directory that contains it.
	SkipCycle SkipReason = "cycle"
)

// Event is one step of an upload, as Options.OnEvent sees it.
type Event struct {
	Kind EventKind
	// Path is the file's path relative to the directory (slash-separated)
	// and Object its object's name; both are "" for Walked.
	Path   string
	Object string
	// Size is the file's size, or for Walked the total of all files.
	Size int64
	// Files is the number of files the walk found (Walked).
	Files int
	// Bytes is how much of the file the service holds (Progressed).
	Bytes int64
	// Resumed: the upload continues an earlier run's (Started, Done).
	Resumed bool
	// Found: an earlier run stored the file before it could record it,
	// and this run found the object (Done).
	Found bool
	// Reason says why the file was skipped (Skipped).
	Reason SkipReason
	// Err is why the file failed (Failed), why a link was left out
	// (Skipped), or why an earlier run's upload could not be continued
	// (Started).
	Err error
	// Attrs are the stored object's attributes (Done).
	Attrs *uploader.ObjectAttrs
}

// FileError is the failure of one file.
type FileError struct {
	Path   string // relative to the directory
	Object string
	Err    error
}

// Error implements error.
func (e *FileError) Error() string {
	return fmt.Sprintf("%s -> %s: %v", e.Path, e.Object, e.Err)
}

// Unwrap returns the cause.
func (e *FileError) Unwrap() error { return e.Err }

// Summary is what an upload did.
type Summary struct {
	// Files and Bytes are the files the walk found (after the filter) and
	// their total size.
	Files int
	Bytes int64
	// Uploaded is the number of files this run stored, Resumed of them
	// continued from an earlier run's upload, and UploadedBytes their
	// size.
	Uploaded      int
	Resumed       int
	UploadedBytes int64
	// Found is the number of files an earlier run had stored without
	// recording it: recorded, not sent again.
	Found int
	// Unchanged is the number of files skipped because the manifest
	// records them stored and unchanged; Existing those skipped because
	// the object existed (Options.SkipExisting).
	Unchanged int
	Existing  int
	// Failed are the files that failed, in the order they failed.
	Failed []FileError
	// NotStarted is the number of files left alone after a failure stopped
	// the run, or after the context ended.
	NotStarted int
	// Elapsed is how long the upload took, the walk included.
	Elapsed time.Duration
}

// OK reports whether every file is stored, or was skipped on purpose.
func (s *Summary) OK() bool {
	return len(s.Failed) == 0 && s.NotStarted == 0 &&
		s.Uploaded+s.Found+s.Unchanged+s.Existing == s.Files
}

// ObjectsPerSecond is the rate of the files this run stored.
func (s *Summary) ObjectsPerSecond() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Uploaded) / s.Elapsed.Seconds()
}
