package segment

import (
	"fmt"
	"os"
	"sort"
)

// indexFile is a file of fixed-size entries: the sparse offset index
// (.index) and the time index (.timeindex) share it. A sealed segment's index
// is memory-mapped read-only. The active segment's entries live in memory
// (buf) and are written to the file when the segment is sealed or the log is
// closed: after an unclean shutdown the active segment's index is rebuilt by
// the recovery scan anyway, and this saves two system calls per indexed
// append. Entries below n are published and read under Log.mu through data;
// the writer (holding Log.appendMu) fills entry n in buf before publishing
// n+1 together with data = buf.
type indexFile struct {
	path       string
	fs         FS
	file       File
	ref        *fileRef // owns file: close drops it, a flush of the sealed index holds one more
	mp         Mapping
	data       []byte // (Log.mu) entries as readers see them
	buf        []byte // (appendMu) the active segment's entries; nil when sealed
	entrySize  int
	n          int // (Log.mu) published entries
	maxEntries int
}

// openIndexFile opens (creating if needed) an index. A writable index loads
// its first keep entries (all when keep < 0) into memory; a read-only one
// maps the file.
func openIndexFile(fs FS, path string, entrySize, maxBytes int, writable bool, keep int) (*indexFile, error) {
	flag := os.O_RDONLY
	if writable {
		flag = os.O_RDWR | os.O_CREATE
	}
	f, err := fs.OpenFile(path, flag, 0o644)
	if err != nil {
		return nil, err
	}
	ix := &indexFile{path: path, fs: fs, file: f, ref: newFileRef(f), entrySize: entrySize}
	size, err := f.Size()
	if err != nil {
		f.Close()
		return nil, err
	}
	if writable {
		ix.maxEntries = maxBytes / entrySize
		if keep < 0 || int64(keep*entrySize) > size {
			keep = int(size) / entrySize
		}
		keep = min(keep, ix.maxEntries)
		ix.buf = make([]byte, keep*entrySize, max(keep*entrySize*2, 1024))
		if keep > 0 {
			if _, err := f.ReadAt(ix.buf, 0); err != nil {
				f.Close()
				return nil, err
			}
		}
		ix.n, ix.data = keep, ix.buf
		return ix, nil
	}
	ix.n = int(size) / entrySize
	ix.maxEntries = ix.n
	if ix.n > 0 {
		ix.mp, err = f.Map(ix.n*entrySize, false)
		if err != nil {
			f.Close()
			return nil, err
		}
		ix.data = ix.mp.Bytes()
	}
	return ix, nil
}

func (ix *indexFile) entry(i int) []byte {
	return ix.data[i*ix.entrySize : (i+1)*ix.entrySize]
}

func (ix *indexFile) full() bool { return ix.n >= ix.maxEntries }

// writeNext fills entry n in memory (unpublished).
func (ix *indexFile) writeNext(fill func(e []byte)) error {
	if ix.buf == nil {
		return fmt.Errorf("segment: index %s is sealed", ix.path)
	}
	at, need := ix.n*ix.entrySize, (ix.n+1)*ix.entrySize
	if need > cap(ix.buf) {
		nb := make([]byte, at, max(2*need, 1024))
		copy(nb, ix.buf[:at])
		ix.buf = nb
	}
	ix.buf = ix.buf[:need]
	fill(ix.buf[at:need])
	return nil
}

// publish makes the entry written by writeNext visible. Log.mu held.
func (ix *indexFile) publish() {
	ix.n++
	ix.data = ix.buf
}

// persist writes in-memory entries to the file, truncates it to its entries,
// syncs it (when sync) and returns a read-only mapping of it (nil when empty
// or already mapped). The caller swaps it in with adopt under Log.mu.
func (ix *indexFile) persist(sync bool) (Mapping, error) {
	size := ix.n * ix.entrySize
	if ix.buf != nil && size > 0 {
		if _, err := ix.file.WriteAt(ix.buf[:size], 0); err != nil {
			return nil, err
		}
	}
	if err := ix.file.Truncate(int64(size)); err != nil {
		return nil, err
	}
	if sync {
		if err := ix.file.Sync(); err != nil {
			return nil, &flushError{err}
		}
	}
	if ix.buf == nil || size == 0 {
		return nil, nil
	}
	return ix.file.Map(size, false)
}

// adopt switches a persisted index to its mapping. Log.mu held (or no readers).
func (ix *indexFile) adopt(m Mapping) {
	ix.maxEntries = ix.n
	if m == nil {
		if ix.n == 0 {
			ix.buf = nil
		}
		return
	}
	ix.mp, ix.data, ix.buf = m, m.Bytes(), nil
}

// fileRef returns the reference-counted file of the index, nil if none.
func (ix *indexFile) fileRef() *fileRef {
	if ix == nil {
		return nil
	}
	return ix.ref
}

func (ix *indexFile) close() error {
	var err error
	if ix.mp != nil {
		err = ix.mp.Unmap()
		ix.mp, ix.data = nil, nil
	}
	ix.ref.release()
	return err
}

// Offset index entries: relative offset uint32, position uint32.
const offsetEntrySize = 8

type offsetIndex struct{ *indexFile }

func (ix offsetIndex) at(i int) (rel uint32, pos uint32) {
	e := ix.entry(i)
	return be.Uint32(e), be.Uint32(e[4:])
}

// lookup returns the relative offset and position of the last indexed batch
// whose base offset is at most rel ((0, 0) if none). Log.mu must be held.
func (ix offsetIndex) lookup(rel int64) (int64, int64) {
	i := sort.Search(ix.n, func(i int) bool {
		r, _ := ix.at(i)
		return int64(r) > rel
	})
	if i == 0 {
		return 0, 0
	}
	r, pos := ix.at(i - 1)
	return int64(r), int64(pos)
}

// lastBefore returns the position and relative offset of the last entry whose
// position is below pos, or (0, 0, false).
func (ix offsetIndex) lastBefore(pos int64) (int, bool) {
	i := sort.Search(ix.n, func(i int) bool {
		_, p := ix.at(i)
		return int64(p) >= pos
	})
	return i, i > 0
}

func (ix offsetIndex) add(rel, pos uint32) error {
	return ix.writeNext(func(e []byte) {
		be.PutUint32(e, rel)
		be.PutUint32(e[4:], pos)
	})
}

// check validates a trusted index against the size of its log.
func (ix offsetIndex) check(logSize int64) error {
	var prevRel, prevPos int64 = -1, -1
	for i := 0; i < ix.n; i++ {
		r, p := ix.at(i)
		if int64(r) <= prevRel || int64(p) <= prevPos || int64(p) >= logSize {
			return fmt.Errorf("index %s: bad entry %d (rel %d pos %d)", ix.path, i, r, p)
		}
		prevRel, prevPos = int64(r), int64(p)
	}
	return nil
}
