// Package uring makes file ranges durable through io_uring (Linux 5.1+):
// Ring.Fsync parks only the calling goroutine while the kernel's io-wq
// worker runs the fdatasync, where an msync or fdatasync system call holds
// its thread, and after sysmon's hand-off its P, for the whole flush.
//
// Why: a node runs at GOMAXPROCS 1 (its share of a small machine). A
// blocking flush (~0.2–0.5 ms) made the Go scheduler hand the P to another
// thread and back on every group commit, futex wakes and sleeps on both
// sides; on a paravirtualised VM each switch is dear. With the ring the
// thread keeps running network work, and a completion arrives as a read of
// an eventfd in the netpoller.
//
// The package does three operations. Fsync: IORING_OP_FSYNC with
// IORING_FSYNC_DATASYNC over a byte range, the same vfs_fsync_range the
// kernel runs for msync(MS_SYNC) of a shared file mapping, or for
// fdatasync when the range is the whole file. Fadvise and Madvise:
// IORING_OP_FADVISE and IORING_OP_MADVISE (5.6), which the page cache
// drop after a flush uses (POSIX_FADV_DONTNEED can take milliseconds).
//
// Layout (include/uapi/linux/io_uring.h): one mmap of the submission and
// completion rings (IORING_FEAT_SINGLE_MMAP, required), one of the 64-byte
// submission entries. Submissions take a mutex, fill an entry, publish the
// tail, and call io_uring_enter without waiting; the kernel consumes the
// entry during that call, so the ring never holds more than one. At most
// Entries operations are in flight (a free list of slots, each with its
// completion channel), so the completion ring (twice as large) cannot
// overflow. One reaper goroutine reads the eventfd (with a raw read: a
// system call entered through package os wakes sysmon) and drains
// completions.
//
// New fails where io_uring is missing or disabled
// (/proc/sys/kernel/io_uring_disabled, seccomp); callers fall back to the
// plain system call.
package uring
