package segment

// Page cache release.
//
// Appends write into the page cache (appendOneLocked), and readers map the
// same pages. Left alone, every byte ever appended stays cached until the
// kernel needs the memory, so a log writing at speed keeps taking free pages
// that were never used. On a virtual machine whose balloon reports free pages
// to the host (virtio-balloon free page reporting, as on the machines this
// project is measured on), the first write to such a page costs a fault on
// the host: measured here, fresh page cache took writes at 250–300 MB/s
// against 1.2 GB/s when the same program, fsyncing every MiB, dropped what
// it had made durable 8 MiB earlier (its pages are then reused while still
// backed). A replicated log at 65 MB/s of payload spent a third of the
// machine's CPU in that copy.
//
// So after each flush of the active segment, durable bytes more than
// Options.CacheBytes behind the segment's end are dropped from the page
// cache, in steps of at least dropStep: MADV_DONTNEED on the log's own
// read-only shared mapping (fadvise skips pages a process maps), then
// POSIX_FADV_DONTNEED on the file. Both only drop clean, cached copies: the
// data is on disk (the flush made it durable), a reader touching the range
// afterwards faults it back in from disk, and a dirty page (rewritten after
// a truncation) is never dropped by either. Tail readers (followers, caught
// up consumers) read within the kept window; a consumer further behind reads
// from disk, with readahead (the mapping is MADV_SEQUENTIAL).
//
// Nothing depends on the drop for correctness: a range dropped twice, or
// never (a flush that a truncation cut, a sealed segment's last window), only
// costs a system call or leaves pages for the kernel to evict. uncached is a
// hint, kept page aligned and lowered by truncations. The drop runs on the
// flushing goroutine before the flush's waiters are released: measured here,
// ~4 µs for the madvise and ~40 µs for the fadvise of 1 MiB, once per MiB.

// dropStep is the least a drop covers: two system calls per MiB.
const dropStep = 1 << 20

// pageDropper is a Mapping that can drop its pages of a range (the OS one).
type pageDropper interface {
	DropPages(off, n int) error
}

// cacheDropper is a File whose cached pages of a range can be dropped.
type cacheDropper interface {
	DropCache(off, n int64) error
}

// dropDue reports whether a flush that made s durable up to durable has a
// drop to do.
func (l *Log) dropDue(s *segment, durable int64) bool {
	keep := l.opts.CacheBytes
	return keep >= 0 && (durable-keep)&^int64(pageSize-1)-s.uncached.Load() >= dropStep
}

// dropCache drops the page cache of s below durable-CacheBytes (page
// aligned), from where the last drop ended. mp is s's mapping and file its
// file, both held by the caller (the flush). Errors are ignored: the pages
// stay cached, as without the drop.
func (l *Log) dropCache(s *segment, mp *mapping, file *fileRef, durable int64) {
	upto := (durable - l.opts.CacheBytes) &^ int64(pageSize-1)
	from := s.uncached.Load()
	if upto-from < dropStep || !s.uncached.CompareAndSwap(from, upto) {
		return
	}
	if pd, ok := mp.m.(pageDropper); ok {
		_ = pd.DropPages(int(from), int(upto-from))
	}
	if cd, ok := file.f.(cacheDropper); ok {
		_ = cd.DropCache(from, upto-from)
	}
	if l.opts.OnCacheDrop != nil {
		l.opts.OnCacheDrop(upto - from)
	}
}
