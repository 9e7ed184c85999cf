package tree

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// The manifest's record kinds.
const (
	opDest  = "dest"  // the first line: which destination the manifest is of
	opStart = "start" // a write of the file is about to go out
	opDone  = "done"  // the service stored the file
)

// manifestVersion is the format of the manifest's lines.
const manifestVersion = 1

// Sync the manifest after this many records, or this long after the last
// sync, whichever comes first.
const (
	syncEvery    = 100
	syncInterval = time.Second
)

// Done records are written in batches: when flushBytes of them wait, or
// flushInterval after the first. A process killed before a batch was
// written loses those records, and the next run finds each such file
// through its write's precondition (the object holds the file's bytes)
// instead of the manifest: a failed write and a look-up per file, no
// second generation.
const (
	flushBytes    = 32 << 10
	flushInterval = 20 * time.Millisecond
)

// record is one line of a manifest.
type record struct {
	Op string `json:"op"`
	// dest
	V      int    `json:"v,omitempty"`
	Dir    string `json:"dir,omitempty"`
	Bucket string `json:"bucket,omitempty"`
	Prefix string `json:"prefix,omitempty"`
	// start and done
	Path  string `json:"path,omitempty"`
	Size  int64  `json:"size"`
	MTime int64  `json:"mtime"` // nanoseconds since the epoch
	// IfGen is a start's precondition: the live generation its write must
	// find, 0 for "the object does not exist".
	IfGen int64 `json:"ifGen"`
	// CRC32C and Gen are the stored object's, in a done record.
	CRC32C uint32 `json:"crc32c"`
	Gen    int64  `json:"gen"`
}

// fileState is what the manifest says of one file.
type fileState struct {
	done    bool   // a done record
	doneRec record // the last one
	// started: a start record came after the last done record (or there
	// is no done record): a write may have gone out whose outcome is not
	// recorded.
	started  bool
	startRec record
}

// manifest is the log of one destination's file outcomes. Its methods
// are safe for concurrent use.
type manifest struct {
	path, lockPath string
	header         record
	lock           *os.File // held (flock) while the manifest is open

	mu       sync.Mutex
	f        *os.File
	state    map[string]fileState
	unsynced int    // records written since the syncer last started a sync
	err      error  // the first write or sync error: later appends return it
	later    []byte // done records not written yet (see appendLater)
	laterN   int    // how many

	// The syncer: a goroutine that syncs the file when kicked (syncEvery
	// records) or every syncInterval, so that no append waits for a sync.
	kick    chan struct{}
	stop    chan struct{}
	stopped chan struct{}
}

// manifestName returns the base name of the manifest of a destination.
func manifestName(header record) string {
	sum := sha256.Sum256([]byte(header.Dir + "\x00" + header.Bucket + "\x00" + header.Prefix))
	return "tree-" + hex.EncodeToString(sum[:16])
}

// openManifest opens (creating it if needed) the manifest of header's
// destination in dir, reads what it holds and locks it against other
// processes.
func openManifest(dir string, header record) (*manifest, error) {
	header.Op, header.V = opDest, manifestVersion
	base := filepath.Join(dir, manifestName(header))
	m := &manifest{path: base + ".jsonl", lockPath: base + ".lock", header: header, state: make(map[string]fileState)}
	lf, err := os.OpenFile(m.lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("tree: manifest lock: %w", err)
	}
	if err := lockFile(lf); err != nil {
		lf.Close()
		return nil, fmt.Errorf("tree: manifest %s is in use by another process: %w", m.path, err)
	}
	m.lock = lf
	if err := m.load(); err != nil {
		m.unlock()
		return nil, err
	}
	return m, nil
}

// load reads the manifest, cuts a torn last line off and opens the file
// for appending.
func (m *manifest) load() error {
	b, err := os.ReadFile(m.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("tree: manifest: %w", err)
	}
	whole := len(b)
	if i := bytes.LastIndexByte(b, '\n'); i+1 < len(b) {
		whole = i + 1 // a line a crash tore
	}
	for line := range bytes.SplitSeq(b[:whole], []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var r record
		if json.Unmarshal(line, &r) != nil {
			continue // damaged: the line is lost, the next run sends its file again under a precondition
		}
		m.apply(r)
	}
	f, err := os.OpenFile(m.path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("tree: manifest: %w", err)
	}
	if err := f.Truncate(int64(whole)); err != nil {
		f.Close()
		return fmt.Errorf("tree: manifest: %w", err)
	}
	if _, err := f.Seek(int64(whole), 0); err != nil {
		f.Close()
		return fmt.Errorf("tree: manifest: %w", err)
	}
	m.f = f
	m.kick, m.stop, m.stopped = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	go m.syncer()
	if whole == 0 {
		if err := m.append(m.header); err != nil {
			close(m.stop)
			<-m.stopped
			f.Close()
			return err
		}
	}
	return nil
}

// syncer syncs the file when kicked or every syncInterval, until stopped.
func (m *manifest) syncer() {
	defer close(m.stopped)
	t := time.NewTicker(syncInterval)
	defer t.Stop()
	f := time.NewTicker(flushInterval)
	defer f.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-f.C:
			m.mu.Lock()
			m.flushLocked()
			m.mu.Unlock()
			continue
		case <-m.kick:
		case <-t.C:
		}
		m.mu.Lock()
		m.flushLocked()
		n := m.unsynced
		m.unsynced = 0
		m.mu.Unlock()
		if n == 0 {
			continue
		}
		if err := m.f.Sync(); err != nil {
			m.mu.Lock()
			if m.err == nil {
				m.err = fmt.Errorf("tree: manifest: %w", err)
			}
			m.mu.Unlock()
		}
	}
}

// apply folds r into the state.
func (m *manifest) apply(r record) {
	switch r.Op {
	case opStart:
		s := m.state[r.Path]
		s.started, s.startRec = true, r
		m.state[r.Path] = s
	case opDone:
		s := m.state[r.Path]
		s.done, s.doneRec, s.started, s.startRec = true, r, false, record{}
		m.state[r.Path] = s
	}
}

// get returns the state of the file at path (relative, slash-separated).
func (m *manifest) get(path string) fileState {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state[path]
}

// paths returns the paths of the files the manifest knows.
func (m *manifest) paths() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.state))
	for p := range m.state {
		out = append(out, p)
	}
	return out
}

// append writes r as one line with one write(2), so that a process killed
// right after it returns leaves the line in the page cache; the syncer
// syncs the file every syncEvery records or syncInterval.
func (m *manifest) append(r record) error {
	b := appendRecord(make([]byte, 0, 128+len(r.Path)), &r)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	if _, err := m.f.Write(b); err != nil {
		m.err = fmt.Errorf("tree: manifest: %w", err)
		return m.err
	}
	m.apply(r)
	if m.unsynced++; m.unsynced == syncEvery && m.kick != nil {
		select {
		case m.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// appendLater is append for a record whose loss a later run makes good
// (a done record: see flushBytes): it is written with others, by the
// syncer or once flushBytes of them wait.
func (m *manifest) appendLater(r record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	m.later = appendRecord(m.later, &r)
	m.laterN++
	m.apply(r)
	if len(m.later) >= flushBytes {
		m.flushLocked()
	}
	return m.err
}

// flushLocked writes the records appendLater kept, with one write(2).
// m.mu is held.
func (m *manifest) flushLocked() {
	if len(m.later) == 0 || m.err != nil {
		return
	}
	if _, err := m.f.Write(m.later); err != nil {
		m.err = fmt.Errorf("tree: manifest: %w", err)
		return
	}
	m.later = m.later[:0]
	if m.unsynced += m.laterN; m.unsynced >= syncEvery && m.kick != nil {
		select {
		case m.kick <- struct{}{}:
		default:
		}
	}
	m.laterN = 0
}

// close syncs the manifest, compacts it if compact is set (one line per
// file, written to a temporary file, synced and renamed over the log),
// and releases the lock.
func (m *manifest) close(compact bool) error {
	close(m.stop)
	<-m.stopped
	m.mu.Lock()
	defer m.mu.Unlock()
	defer m.unlock()
	m.flushLocked()
	err := m.err
	if err == nil {
		if serr := m.f.Sync(); serr != nil {
			err = fmt.Errorf("tree: manifest: %w", serr)
		}
	}
	if cerr := m.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("tree: manifest: %w", cerr)
	}
	if err != nil || !compact {
		return err
	}
	return m.compactLocked()
}

// compactLocked rewrites the manifest from the state. m.mu is held.
func (m *manifest) compactLocked() error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	_ = enc.Encode(m.header)
	paths := make([]string, 0, len(m.state))
	for p := range m.state {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		s := m.state[p]
		if s.done {
			_ = enc.Encode(s.doneRec)
		}
		if s.started {
			_ = enc.Encode(s.startRec)
		}
	}
	dir := filepath.Dir(m.path)
	f, err := os.CreateTemp(dir, ".tree-*")
	if err != nil {
		return fmt.Errorf("tree: manifest: %w", err)
	}
	_, err = f.Write(buf.Bytes())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), m.path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("tree: manifest: %w", err)
	}
	return syncDir(dir)
}

// unlock releases the manifest's lock.
func (m *manifest) unlock() {
	if m.lock != nil {
		_ = unlockFile(m.lock)
		_ = m.lock.Close()
		m.lock = nil
	}
}

// appendRecord appends a start or done record as a JSON line, as
// json.Marshal would write it (the header goes through json.Marshal).
func appendRecord(b []byte, r *record) []byte {
	if r.Op != opStart && r.Op != opDone {
		j, _ := json.Marshal(r)
		return append(append(b, j...), '\n')
	}
	b = append(b, `{"op":"`...)
	b = append(b, r.Op...)
	b = append(b, `","path":`...)
	b = appendString(b, r.Path)
	b = append(b, `,"size":`...)
	b = strconv.AppendInt(b, r.Size, 10)
	b = append(b, `,"mtime":`...)
	b = strconv.AppendInt(b, r.MTime, 10)
	b = append(b, `,"ifGen":`...)
	b = strconv.AppendInt(b, r.IfGen, 10)
	b = append(b, `,"crc32c":`...)
	b = strconv.AppendUint(b, uint64(r.CRC32C), 10)
	b = append(b, `,"gen":`...)
	b = strconv.AppendInt(b, r.Gen, 10)
	return append(b, "}\n"...)
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	plain := utf8.ValidString(s)
	for i := 0; plain && i < len(s); i++ {
		c := s[i]
		plain = c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' && c != 0x7f
	}
	if !plain {
		j, _ := json.Marshal(s)
		return append(b, j...)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("tree: manifest: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("tree: manifest: %w", err)
	}
	return nil
}
