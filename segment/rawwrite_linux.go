//go:build linux

package segment

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pwriteRaw writes p at off with raw pwrite system calls: without the Go
// scheduler's hand-off (see rawWrites).
func pwriteRaw(f *os.File, p []byte, off int64) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var errno syscall.Errno
	cerr := rc.Control(func(fd uintptr) {
		for n < len(p) {
			rest := p[n:]
			r, _, e := unix.RawSyscall6(unix.SYS_PWRITE64, fd, uintptr(unsafe.Pointer(&rest[0])),
				uintptr(len(rest)), uintptr(off+int64(n)), 0, 0)
			switch {
			case e == syscall.EINTR:
				continue
			case e != 0:
				errno = e
				return
			case r == 0:
				return // no progress: reported as a short write
			}
			n += int(r)
		}
	})
	if cerr != nil { // Control fails only on a closed file
		return n, &os.PathError{Op: "write", Path: f.Name(), Err: os.ErrClosed}
	}
	if errno != 0 {
		return n, &os.PathError{Op: "write", Path: f.Name(), Err: errno}
	}
	return n, nil
}
