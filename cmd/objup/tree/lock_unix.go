//go:build unix

package tree

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on f, failing at once if another
// process holds one.
func lockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// unlockFile releases the lock lockFile took.
func unlockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
