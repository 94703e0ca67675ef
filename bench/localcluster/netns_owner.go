package localcluster

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// Ownership of a NetNS tag.
//
// A run that creates namespaces holds an exclusive flock on
// <netnsOwnerDir>/<tag>.lock for as long as its NetNS is open; the kernel
// drops the lock when the run's process dies, however it dies. A namespace
// holding no process is not enough to call it stale: a live chaos run's
// node is down between a kill and its restart, and deleting its namespace
// (and the tag's bridge) then cuts the whole cluster off. CleanupStaleNetNS
// therefore leaves every tag whose lock is held alone.
//
// The file is opened close-on-exec, so the nodes a run starts do not
// inherit the lock and keep a dead run's tag looking owned.

// netnsOwnerDir holds the lock files; a variable so tests can move it.
var netnsOwnerDir = "/run/paymentlog-netns"

// tagOwner is a held claim on a tag.
type tagOwner struct {
	f    *os.File
	path string
}

var errTagTaken = errors.New("localcluster: netns tag owned by a live run")

// claimTag takes tag's lock without waiting. It returns errTagTaken when a
// live run holds it.
func claimTag(tag string) (*tagOwner, error) {
	if err := os.MkdirAll(netnsOwnerDir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(netnsOwnerDir, tag+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := flockNB(f); err != nil {
		f.Close()
		return nil, err
	}
	return &tagOwner{f: f, path: path}, nil
}

// release removes the lock file and drops the lock.
func (o *tagOwner) release() {
	if o == nil {
		return
	}
	os.Remove(o.path)
	o.f.Close()
}

// tagOwnership says whether a live run holds tag's lock (owned) and whether
// tag has a lock file at all (known; an older build's runs and tags whose
// owner closed cleanly have none).
func tagOwnership(tag string) (owned, known bool) {
	f, err := os.OpenFile(filepath.Join(netnsOwnerDir, tag+".lock"), os.O_RDWR, 0)
	if err != nil {
		return false, false
	}
	defer f.Close()
	if err := flockNB(f); err != nil {
		return errors.Is(err, errTagTaken), true
	}
	return false, true // closing f drops the lock just taken
}

// forgetTag removes a dead owner's lock file.
func forgetTag(tag string) { os.Remove(filepath.Join(netnsOwnerDir, tag+".lock")) }

func flockNB(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return errTagTaken
		default:
			return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
	}
}
