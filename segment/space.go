package segment

import (
	"errors"

	"golang.org/x/sys/unix"
)

// Space is how much room a file system has, as statfs(2) reports it: Total
// is its size and Avail what an unprivileged writer may still allocate
// (blocks reserved for root are not counted as available).
type Space struct {
	Total, Avail int64
}

// SpaceReporter is implemented by file systems that can say how much room
// the file system holding dir has (OSFS, and MemFS with a capacity).
type SpaceReporter interface {
	Space(dir string) (Space, error)
}

// ErrSpaceUnknown: the file system cannot say how much room it has.
var ErrSpaceUnknown = errors.New("segment: free space unknown")

// SpaceOf reports the room of the file system holding dir, through fs
// (nil: the OS's); ErrSpaceUnknown when fs cannot tell.
func SpaceOf(fs FS, dir string) (Space, error) {
	if r, ok := fsOrDefault(fs).(SpaceReporter); ok {
		return r.Space(dir)
	}
	return Space{}, ErrSpaceUnknown
}

// Space implements SpaceReporter with statfs(2).
func (OSFS) Space(dir string) (Space, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return Space{}, err
	}
	return Space{Total: int64(st.Blocks) * int64(st.Bsize), Avail: int64(st.Bavail) * int64(st.Bsize)}, nil
}

// Space implements SpaceReporter: the capacity and what is left of it;
// ErrSpaceUnknown without a capacity.
func (fs *MemFS) Space(string) (Space, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.mu.capac < 0 {
		return Space{}, ErrSpaceUnknown
	}
	return Space{Total: fs.mu.capac, Avail: max(fs.mu.capac-fs.usedLocked(), 0)}, nil
}

// IsDiskFull reports whether err is a write refused for lack of space
// (ErrDiskFull, ENOSPC, EDQUOT), not a failed fsync.
func IsDiskFull(err error) bool {
	return err != nil && (errors.Is(err, ErrDiskFull) || isNoSpace(err))
}
