package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// LockFileName is the file in the data directory a running node holds an
// exclusive lock on (flock), so that a second process started on the same
// directory by mistake stops at once instead of appending to the same
// segments. The lock ends with the process, however it ends; the file,
// which holds the owner's pid for the error message, stays behind.
const LockFileName = ".lock"

// ErrDataDirInUse is returned (wrapped) when another process holds the lock.
var ErrDataDirInUse = errors.New("data directory is in use by another process")

// dirLock is a held data directory lock.
type dirLock struct{ f *os.File }

// lockDataDir takes the data directory lock or fails without waiting.
func lockDataDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, LockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("node: data dir lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		owner := "unknown pid"
		if b, rerr := os.ReadFile(path); rerr == nil {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
				owner = "pid " + strconv.Itoa(pid)
			}
		}
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("node: %s: %w (%s holds %s)", dir, ErrDataDirInUse, owner, LockFileName)
		}
		return nil, fmt.Errorf("node: data dir lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dirLock{f: f}, nil
}

// unlock releases the lock (closing the file drops the flock).
func (l *dirLock) unlock() {
	if l != nil && l.f != nil {
		l.f.Close()
		l.f = nil
	}
}
