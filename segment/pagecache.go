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
// cache, in whole dropStep stretches of the file: MADV_DONTNEED on the log's own
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
// ~4 µs for the madvise and ~40 µs for the fadvise of 1 MiB, once per
// dropStep (under a node's full load, per MiB, 0.1 and 0.45 ms on average,
// up to 11 ms). Both go through the process's io_uring when flushes do
// (flushring.go): a blocking system call from Go wakes sysmon and, beyond
// 20 µs, hands the thread's P to another thread; on the ring only the
// goroutine waits.

// dropStep is the least a drop covers, and the alignment of its ends in
// the file: 2 MiB, the largest folio the page cache holds a file in on
// x86-64. POSIX_FADV_DONTNEED skips a folio its range covers only in
// part, and ext4 caches large writes in large folios (a produce request's
// batches are up to 1 MiB): drops cut at page boundaries left the folio
// astride each cut cached for good. Measured here, a file written in 1 MiB
// pieces and dropped in steps of 1 MiB + 12 KiB kept 1 792 of its 2 048
// pages; in 2 MiB-aligned steps it kept none.
const dropStep = 2 << 20

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
	return keep >= 0 && dropEnd(durable, keep)-s.uncached.Load() >= dropStep
}

// dropEnd is where a drop after a flush to durable ends: CacheBytes
// behind it, rounded down to dropStep.
func dropEnd(durable, keep int64) int64 { return (durable - keep) &^ (dropStep - 1) }

// dropCache drops the page cache of s below durable-CacheBytes (rounded
// down to dropStep), from where the last drop ended. mp is s's mapping and
// file its file, both held by the caller (the flush). Errors are ignored:
// the pages stay cached, as without the drop.
func (l *Log) dropCache(s *segment, mp *mapping, file *fileRef, durable int64) {
	upto := dropEnd(durable, l.opts.CacheBytes)
	from := s.uncached.Load()
	if upto-from < dropStep || !s.uncached.CompareAndSwap(from, upto) {
		return
	}
	// A truncation leaves the mark at a page; the range starts at the
	// stretch holding it (its pages below the mark are dropped already,
	// or cached again by the truncation's reads: either way harmless).
	from &^= dropStep - 1
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
