// Package tree uploads the files of a directory to a bucket, and survives
// the death of the process that does it: a second run, after a kill -9, an
// OOM kill or a machine crash, sends only what the first did not finish,
// continues large files from what the service persisted, and never sends a
// finished file again nor makes a second generation of an object.
//
// # Naming
//
// Upload walks a directory and names each regular file's object prefix +
// "/" + its path relative to the directory, with slashes, as `gcloud
// storage rsync -r` does: "logs" and "a/b.txt" make "logs/a/b.txt"; a
// prefix that is empty or ends in "/" gets no second slash. UploadFile
// uploads one file under a name of its own. A filter (Options.Filter) sees
// each relative path and can leave out a file or a whole directory.
// Symbolic links are left out unless Options.FollowSymlinks; followed, a
// link to a directory that is one of its own ancestors (a cycle) is left
// out and reported (a Skipped event). Devices, sockets and pipes are left
// out.
//
// # What survives a kill
//
// Two records on disk, both in the journal's directory
// (Options.JournalDir):
//
//   - The journal (uploader.Journal) keeps the resume handle of each
//     upload that can be continued: a resumable session (a file larger
//     than one chunk), a parallel composite upload (a file of at least
//     Options.ParallelThreshold bytes) and its temporary objects. A later
//     run continues it with Client.Resume, which checks the file against
//     the handle before a byte goes out; a file that changed meanwhile has
//     its old upload discarded (the session cancelled, the temporary
//     objects deleted) and is uploaded anew, and so has a file whose
//     session the service no longer knows or refuses to continue. The
//     uploads an earlier run left for files that are gone (deleted, or
//     filtered out since) are discarded at the end of the run.
//   - The manifest, one per destination (directory, bucket, prefix): an
//     append-only log of JSON lines: a "start" line before a file's first
//     byte goes out (with the precondition its write carries) when a later
//     run could not tell it from the manifest (a file of more than a chunk,
//     which may leave a journal entry; an overwrite of an object found;
//     every write under SkipExisting), and a "done" line once the service
//     stored the file (size, modification time, CRC32C and generation). A
//     start line is one write(2) before the upload, so a killed process
//     loses none (the page cache outlives it); done lines go in batches (32
//     KiB or 20 ms), and a file whose done line a kill lost is found by its
//     write's precondition on the next run. A goroutine syncs the file
//     every 100 lines or every second, and it is synced at the end, for a
//     machine that crashes; a torn last line is ignored. A run that ends (whatever the
//     outcome of its files, but not when its context was cancelled)
//     rewrites the manifest compacted: one line per file. A lock file
//     beside it (flock) keeps a second process off the same destination.
//
// A file whose "done" line holds its current size and modification time
// (or, with CompareChecksum, its CRC32C) is skipped without a call. Every
// other write carries a precondition, so no write of an earlier, killed
// process can add a generation later: "the object does not exist" for a
// file the manifest has no generation of, "the live generation is G" for
// one it recorded as G. A write that fails its precondition asks the
// service for the object: when its size and CRC32C are the file's, the
// object is the one an earlier run stored before it could write "done"
// (or one with the same bytes), and it is recorded, not sent again;
// otherwise the object was written by someone else, and it is overwritten
// once under a precondition on the generation found (or skipped, with
// Options.SkipExisting).
//
// # Events, failures and the summary
//
// Options.OnEvent sees each file start, progress, finish, skip or fail.
// By default the first failed file stops the run: no further file starts,
// the files in flight finish. Options.ContinueOnError goes on and reports
// every failed file in Summary.Failed. Upload returns nil only when every
// file is stored or was skipped on purpose.
package tree
