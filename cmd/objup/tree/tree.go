package tree

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/objup/objup/uploader"
)

// Compare says how a run tells that a file changed since the manifest
// recorded it stored.
type Compare int

const (
	// CompareSizeModTime compares the size and the modification time
	// (nanoseconds): no file is read.
	CompareSizeModTime Compare = iota
	// CompareChecksum compares the size and the CRC32C of the file's
	// bytes: every recorded file is read.
	CompareChecksum
)

// DefaultConcurrency is how many files upload at once when
// Options.Concurrency is 0.
const DefaultConcurrency = 32

// Options configure Upload and UploadFile. The zero value uploads every
// regular file, 32 at once, without a journal (a run that is killed leaves
// nothing for the next one), stopping at the first failure.
type Options struct {
	// JournalDir is the directory that holds the journal
	// (uploader.OpenJournal: the resume handles of large files) and the
	// destination's manifest; it is created if need be. Several
	// destinations may share it. Without one, nothing outlives the run.
	JournalDir string
	// Filter, if set, is called with each file's and each directory's
	// path relative to the directory (slash-separated); false leaves the
	// file, or the whole directory, out.
	Filter func(rel string, isDir bool) bool
	// FollowSymlinks uploads what links point to; links to a directory
	// that contains them are left out (SkipCycle).
	FollowSymlinks bool
	// Concurrency is how many files upload at once (0: 32).
	Concurrency int
	// ParallelThreshold, if positive, uploads the files of at least this
	// many bytes as parallel composite uploads (uploader.WithParallelUpload
	// with Parallel).
	ParallelThreshold int64
	// Parallel configures the parallel composite uploads.
	Parallel uploader.ParallelUpload
	// Compare says how a changed file is told from a recorded one.
	Compare Compare
	// SkipExisting leaves objects that exist as they are: each write
	// carries DoesNotExist, and a file whose object exists is skipped
	// (SkipExists), unless it is the one an earlier run stored.
	SkipExisting bool
	// ContinueOnError goes on after a file failed; the default stops
	// starting files at the first failure.
	ContinueOnError bool
	// OnEvent, if set, sees every event. It is called from one goroutine
	// at a time, from the uploads' goroutines: a slow OnEvent slows the
	// upload.
	OnEvent func(Event)
	// WriterOptions are added to each new upload (not to a resumed one,
	// whose attributes were fixed when it began); WithConditions,
	// WithJournal and WithParallelUpload are the tree's own and must not
	// be given.
	WriterOptions []uploader.WriterOption
}

// Upload uploads the regular files under dir to bucket, each as prefix +
// "/" + its path relative to dir (see ObjectName), opts.Concurrency at a
// time, and returns what it did. With opts.JournalDir, a run that is killed
// leaves what the next run of the same (dir, bucket, prefix) needs to
// finish the work without sending a stored file again (see the package
// documentation).
//
// The error is nil when every file is stored or was skipped on purpose
// (Summary.OK); otherwise it is the context's error, the first failed
// file's *FileError (which Summary.Failed lists with the others), or an
// error of the walk or of the manifest. Bad input (an empty or invalid
// bucket name, an invalid prefix, a dir that is not a directory, a
// negative concurrency) is an error before anything is sent.
func Upload(ctx context.Context, c *uploader.Client, dir, bucket, prefix string, opts Options) (Summary, error) {
	start := time.Now()
	if err := checkArgs(c, bucket, &opts); err != nil {
		return Summary{}, err
	}
	if err := checkPrefix(prefix); err != nil {
		return Summary{}, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Summary{}, fmt.Errorf("tree: %w", err)
	}
	w := &walker{root: abs, prefix: prefix, follow: opts.FollowSymlinks, filter: opts.Filter}
	if err := w.walk(); err != nil {
		return Summary{}, err
	}
	r := &run{c: c, bucket: bucket, opts: opts}
	for _, e := range w.skipped {
		e.Object = ObjectName(prefix, e.Path)
		r.emit(e)
	}
	objectOf := func(rel string) string { return ObjectName(prefix, rel) }
	return r.run(ctx, start, record{Dir: abs, Bucket: bucket, Prefix: prefix}, w.files, w.bytes, objectOf)
}

// UploadFile uploads the file at path as gs://bucket/object, as Upload
// uploads each file of a directory: with opts.JournalDir, a run that is
// killed leaves what the next UploadFile of the same path, bucket and
// object needs to finish it. opts.Filter and opts.FollowSymlinks do not
// apply (a link is followed).
func UploadFile(ctx context.Context, c *uploader.Client, path, bucket, object string, opts Options) (Summary, error) {
	start := time.Now()
	if err := checkArgs(c, bucket, &opts); err != nil {
		return Summary{}, err
	}
	if err := checkObject(object); err != nil {
		return Summary{}, fmt.Errorf("tree: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return Summary{}, fmt.Errorf("tree: %w", err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return Summary{}, fmt.Errorf("tree: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return Summary{}, fmt.Errorf("tree: %s is not a regular file", path)
	}
	f := file{path: abs, rel: filepath.Base(abs), object: object, size: fi.Size()}
	r := &run{c: c, bucket: bucket, opts: opts}
	objectOf := func(string) string { return object }
	return r.run(ctx, start, record{Dir: abs, Bucket: bucket, Prefix: "=" + object}, []file{f}, f.size, objectOf)
}

// checkArgs checks what Upload and UploadFile share, and sets defaults.
func checkArgs(c *uploader.Client, bucket string, opts *Options) error {
	if c == nil {
		return errors.New("tree: nil client")
	}
	if err := checkBucket(bucket); err != nil {
		return err
	}
	switch {
	case opts.Concurrency < 0:
		return fmt.Errorf("tree: negative concurrency %d", opts.Concurrency)
	case opts.Concurrency == 0:
		opts.Concurrency = DefaultConcurrency
	}
	if opts.ParallelThreshold < 0 {
		return fmt.Errorf("tree: negative parallel threshold %d", opts.ParallelThreshold)
	}
	if opts.Compare != CompareSizeModTime && opts.Compare != CompareChecksum {
		return fmt.Errorf("tree: unknown Compare %d", opts.Compare)
	}
	return nil
}

// run is one Upload or UploadFile.
type run struct {
	c       *uploader.Client
	bucket  string
	opts    Options
	journal *uploader.Journal          // nil without one
	man     *manifest                  // nil without a journal
	hs      map[string]uploader.Handle // the journal's handles of bucket, by object; nil: look each up

	evMu sync.Mutex // orders OnEvent's calls

	mu      sync.Mutex // guards sum
	sum     Summary
	stopped atomic.Bool // a failure stopped the run
}

// run uploads files; objectOf names the object of a file of the
// manifest.
func (r *run) run(ctx context.Context, start time.Time, dest record, files []file, bytes int64, objectOf func(rel string) string) (sum Summary, err error) {
	r.sum.Files, r.sum.Bytes = len(files), bytes
	if dir := r.opts.JournalDir; dir != "" {
		j, err := uploader.OpenJournal(dir)
		if err != nil {
			return Summary{}, fmt.Errorf("tree: %w", err)
		}
		r.journal = j
		if r.man, err = openManifest(dir, dest); err != nil {
			return Summary{}, err
		}
		// The handles, read at once; an entry that cannot be read (of
		// another format, say) makes each file look its own up instead, so
		// that it fails that file only.
		if hs, err := j.Handles(); err == nil {
			r.hs = make(map[string]uploader.Handle)
			for _, h := range hs {
				if h.Bucket == r.bucket {
					r.hs[h.Object] = h
				}
			}
		}
	}
	r.emit(Event{Kind: Walked, Files: len(files), Size: bytes})

	jobs := make(chan *file)
	var wg sync.WaitGroup
	for range min(r.opts.Concurrency, max(len(files), 1)) {
		wg.Go(func() {
			for f := range jobs {
				r.file(ctx, f)
			}
		})
	}
	sent := 0
	for i := range files {
		if ctx.Err() != nil || r.stopped.Load() {
			break
		}
		select {
		case jobs <- &files[i]:
			sent++
		case <-ctx.Done():
		}
	}
	close(jobs)
	wg.Wait()

	if ctx.Err() == nil && !r.stopped.Load() {
		r.discardStale(ctx, files, objectOf)
	}

	r.mu.Lock()
	sum = r.sum
	r.mu.Unlock()
	sum.NotStarted = len(files) - sent
	if r.man != nil {
		if cerr := r.man.close(ctx.Err() == nil); cerr != nil && err == nil {
			err = cerr
		}
	}
	sum.Elapsed = time.Since(start)
	switch {
	case err != nil:
	case ctx.Err() != nil && !sum.OK():
		err = fmt.Errorf("tree: %w", ctx.Err())
	case len(sum.Failed) > 0:
		err = &sum.Failed[0]
	}
	return sum, err
}

// discardStale abandons the uploads an earlier run left in the journal
// for files of the manifest that this run did not upload (deleted, or
// filtered out since): their sessions are cancelled and their temporary
// objects deleted, so that none outlives the run.
func (r *run) discardStale(ctx context.Context, files []file, objectOf func(rel string) string) {
	if r.man == nil || len(r.hs) == 0 {
		return
	}
	planned := make(map[string]bool, len(files))
	for i := range files {
		planned[files[i].object] = true
	}
	for _, rel := range r.man.paths() {
		obj := objectOf(rel)
		h, ok := r.hs[obj]
		if !ok || planned[obj] {
			continue
		}
		if err := r.c.Discard(ctx, h); err == nil || errors.Is(err, os.ErrNotExist) {
			_ = r.journal.Remove(r.bucket, obj)
		}
	}
}

// emit hands e to OnEvent.
func (r *run) emit(e Event) {
	if r.opts.OnEvent == nil {
		return
	}
	r.evMu.Lock()
	defer r.evMu.Unlock()
	r.opts.OnEvent(e)
}

// fail records f's failure.
func (r *run) fail(f *file, err error) {
	r.mu.Lock()
	r.sum.Failed = append(r.sum.Failed, FileError{Path: f.rel, Object: f.object, Err: err})
	r.mu.Unlock()
	if !r.opts.ContinueOnError {
		r.stopped.Store(true)
	}
	r.emit(Event{Kind: Failed, Path: f.rel, Object: f.object, Size: f.size, Err: err})
}

// skip records that f was not sent.
func (r *run) skip(f *file, why SkipReason) {
	r.mu.Lock()
	if why == SkipUnchanged {
		r.sum.Unchanged++
	} else {
		r.sum.Existing++
	}
	r.mu.Unlock()
	r.emit(Event{Kind: Skipped, Path: f.rel, Object: f.object, Size: f.size, Reason: why})
}

// upload is one file's upload in flight.
type upload struct {
	r     *run
	f     *file
	src   *os.File
	size  int64
	mtime int64
	st    fileState

	crcDone bool
	crc     uint32
	// resumeErr is why an earlier run's upload of the file could not be
	// continued, when it is sent anew for that reason.
	resumeErr error
}

// file uploads f, or skips it, and records the outcome.
func (r *run) file(ctx context.Context, f *file) {
	if err := checkObject(f.object); err != nil {
		r.fail(f, err)
		return
	}
	src, err := os.Open(f.path)
	if err != nil {
		r.fail(f, err)
		return
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		r.fail(f, err)
		return
	}
	if !fi.Mode().IsRegular() {
		r.fail(f, fmt.Errorf("%s is no longer a regular file", f.path))
		return
	}
	u := &upload{r: r, f: f, src: src, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	f.size = u.size
	if r.man != nil {
		u.st = r.man.get(f.rel)
	}
	if err := u.run(ctx); err != nil {
		r.fail(f, err)
	}
}

// run uploads the file, or skips it; a returned error is the file's
// failure.
func (u *upload) run(ctx context.Context) error {
	r, f, st := u.r, u.f, &u.st
	h, hasHandle := r.hs[f.object]
	if r.journal != nil && r.hs == nil {
		var err error
		if h, hasHandle, err = r.journal.Lookup(r.bucket, f.object); err != nil {
			return err
		}
	}
	if st.done && !st.started && st.doneRec.Size == u.size {
		same := st.doneRec.MTime == u.mtime
		if r.opts.Compare == CompareChecksum {
			crc, err := u.checksum()
			if err != nil {
				return err
			}
			same = crc == st.doneRec.CRC32C
		}
		if same {
			if hasHandle { // left by a run whose outcome was unknown, settled since
				_ = r.c.Discard(ctx, h)
				_ = r.journal.Remove(r.bucket, f.object)
			}
			r.skip(f, SkipUnchanged)
			return nil
		}
	}

	// The precondition every write of this file carries: the one of the
	// write an earlier run may have sent, else the generation recorded.
	var ifGen int64
	switch {
	case r.opts.SkipExisting:
	case st.started:
		ifGen = st.startRec.IfGen
	case st.done:
		ifGen = st.doneRec.Gen
	}

	earlier := st.started // a write of an earlier run may have stored the file
	var attrs *uploader.ObjectAttrs
	var err error
	resumed := false
	if hasHandle {
		attrs, resumed, err = u.resume(ctx, h)
	}
	if !resumed {
		attrs, err = u.send(ctx, ifGen)
	}
	for try := 0; err != nil; try++ {
		if uploader.CodeOf(err) != codes.FailedPrecondition || try == 2 {
			return err
		}
		if r.opts.SkipExisting && !earlier {
			r.skip(f, SkipExists)
			return nil
		}
		// The object exists (or is not the generation recorded): is it this
		// file, stored by an earlier run that could not record it?
		a, aerr := r.c.Attrs(ctx, r.bucket, f.object)
		switch {
		case errors.Is(aerr, os.ErrNotExist):
			if r.opts.SkipExisting {
				return err
			}
			attrs, err = u.send(ctx, 0)
			resumed = false
			continue
		case aerr != nil:
			return fmt.Errorf("%w (and then: %w)", err, aerr)
		}
		crc, cerr := u.checksum()
		if cerr != nil {
			return cerr
		}
		if a.Size == u.size && a.HasCRC32C && a.CRC32C == crc {
			return u.done(a, false, true)
		}
		if r.opts.SkipExisting {
			r.skip(f, SkipExists)
			return nil
		}
		if try == 1 {
			return err // written by someone else, twice: leave it to them
		}
		attrs, err = u.send(ctx, a.Generation)
		resumed = false
	}
	return u.done(attrs, resumed, false)
}

// resume continues h; ok false says that it could not and the file is to
// be sent anew.
func (u *upload) resume(ctx context.Context, h uploader.Handle) (attrs *uploader.ObjectAttrs, ok bool, err error) {
	r, f, st := u.r, u.f, &u.st
	changed := st.started && (st.startRec.Size != u.size || st.startRec.MTime != u.mtime)
	if !changed {
		r.emit(Event{Kind: Started, Path: f.rel, Object: f.object, Size: u.size, Resumed: true})
		opts := []uploader.WriterOption{uploader.WithJournal(r.journal), u.progress()}
		if (h.Kind == uploader.KindParallel || h.Kind == uploader.KindMultipart) && r.opts.Parallel.Parts > 0 {
			opts = append(opts, uploader.WithParallelUpload(uploader.ParallelUpload{Parts: r.opts.Parallel.Parts}))
		}
		attrs, err = r.c.Resume(ctx, h, io.NewSectionReader(u.src, 0, u.size), opts...)
		switch {
		case err == nil, uploader.CodeOf(err) == codes.FailedPrecondition:
			return attrs, true, err
		case uploader.IsSourceChanged(err):
			changed = true
		case errors.Is(err, os.ErrNotExist):
			// The service no longer knows the session: start again.
			if rerr := r.journal.Remove(r.bucket, f.object); rerr != nil {
				return nil, true, rerr
			}
			return nil, false, nil
		case uploader.IsOutcomeUnknown(err) || ctx.Err() != nil:
			return nil, true, err
		default:
			// The service refused to go on with the upload (its outcome is
			// known: nothing was stored): abandon it and send the file anew,
			// under the same precondition, which the old upload had too.
			u.resumeErr = err
			_ = r.c.Discard(ctx, h)
			if rerr := r.journal.Remove(r.bucket, f.object); rerr != nil {
				return nil, true, rerr
			}
			return nil, false, nil
		}
	}
	if changed {
		if derr := r.c.Discard(ctx, h); derr != nil && !errors.Is(derr, os.ErrNotExist) &&
			uploader.CodeOf(derr) != codes.FailedPrecondition {
			return nil, true, fmt.Errorf("discarding the upload of the earlier version: %w", derr)
		}
		if rerr := r.journal.Remove(r.bucket, f.object); rerr != nil {
			return nil, true, rerr
		}
	}
	return nil, false, nil
}

// send uploads the file anew under the precondition ifGen (0: the object
// must not exist), after recording the start.
func (u *upload) send(ctx context.Context, ifGen int64) (*uploader.ObjectAttrs, error) {
	r, f := u.r, u.f
	// The start record says which precondition the write carries, for a
	// later run whose own would otherwise differ: one that overwrites an
	// object found (a generation the manifest does not hold), and every
	// write under SkipExisting (whose failed precondition a later run
	// must tell from an object of someone else's); and a file large
	// enough to leave a journal entry (more than a chunk), which the
	// manifest's paths tie to this destination (see discardStale). The
	// one-shot write of a small file new to the manifest (the object must
	// not exist) or recorded as generation G (G must be live) carries
	// what a later run reads from the manifest anyway: its record would
	// cost a write(2) per file and change nothing.
	if r.man != nil && (ifGen != u.recordedGen() || r.opts.SkipExisting || u.size >= oneShotMax) {
		rec := record{Op: opStart, Path: f.rel, Size: u.size, MTime: u.mtime, IfGen: ifGen}
		if err := r.man.append(rec); err != nil {
			return nil, err
		}
		u.st.started, u.st.startRec = true, rec
	}
	r.emit(Event{Kind: Started, Path: f.rel, Object: f.object, Size: u.size, Err: u.resumeErr})
	u.resumeErr = nil
	cond := uploader.Conditions{DoesNotExist: ifGen == 0, GenerationMatch: ifGen}
	opts := make([]uploader.WriterOption, 0, 4+len(r.opts.WriterOptions))
	opts = append(opts, r.opts.WriterOptions...)
	opts = append(opts, uploader.WithConditions(cond), u.progress())
	if r.journal != nil {
		opts = append(opts, uploader.WithJournal(r.journal))
	}
	if r.opts.ParallelThreshold > 0 && u.size >= r.opts.ParallelThreshold {
		opts = append(opts, uploader.WithParallelUpload(r.opts.Parallel))
	}
	return r.c.Upload(ctx, r.bucket, f.object, io.NewSectionReader(u.src, 0, u.size), opts...)
}

// oneShotMax is the size from which a file may go through a resumable
// session, and leave a journal entry: the smallest chunk (256 KiB).
const oneShotMax = 256 << 10

// recordedGen is the generation the manifest's done record holds of the
// file, or 0.
func (u *upload) recordedGen() int64 {
	if u.st.done {
		return u.st.doneRec.Gen
	}
	return 0
}

// progress reports the bytes the service holds as Progressed events.
func (u *upload) progress() uploader.WriterOption {
	return uploader.WithProgress(func(n int64) {
		u.r.emit(Event{Kind: Progressed, Path: u.f.rel, Object: u.f.object, Size: u.size, Bytes: n})
	})
}

// done records that the object a is the file.
func (u *upload) done(a *uploader.ObjectAttrs, resumed, found bool) error {
	r, f := u.r, u.f
	if a == nil {
		return errors.New("tree: the upload returned no object") // never: Upload and Resume return one with a nil error
	}
	if r.man != nil {
		rec := record{Op: opDone, Path: f.rel, Size: u.size, MTime: u.mtime, CRC32C: a.CRC32C, Gen: a.Generation}
		if err := r.man.appendLater(rec); err != nil {
			return err
		}
	}
	r.mu.Lock()
	if found {
		r.sum.Found++
	} else {
		r.sum.Uploaded++
		r.sum.UploadedBytes += u.size
		if resumed {
			r.sum.Resumed++
		}
	}
	r.mu.Unlock()
	r.emit(Event{Kind: Done, Path: f.rel, Object: f.object, Size: u.size, Bytes: u.size, Resumed: resumed, Found: found, Attrs: a})
	return nil
}

// castagnoli is the CRC-32C table.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checksum returns the CRC32C of the file's first size bytes, read once.
func (u *upload) checksum() (uint32, error) {
	if u.crcDone {
		return u.crc, nil
	}
	h := crc32.New(castagnoli)
	n, err := io.Copy(h, io.NewSectionReader(u.src, 0, u.size))
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", u.f.path, err)
	}
	if n != u.size {
		return 0, fmt.Errorf("reading %s: %d bytes, want %d: the file changed", u.f.path, n, u.size)
	}
	u.crc, u.crcDone = h.Sum32(), true
	return u.crc, nil
}
