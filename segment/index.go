package segment

import (
	"fmt"
	"os"
	"sort"
)

// indexFile is a preallocated (sparse), memory-mapped file of fixed-size entries: the
// sparse offset index (.index) and the time index (.timeindex) share it.
// Entries below n are published and read under Log.mu; the writer (holding
// Log.appendMu) writes entry n before publishing n+1.
type indexFile struct {
	path       string
	fs         FS
	file       File
	mp         Mapping
	data       []byte
	entrySize  int
	n          int // published entries
	maxEntries int
}

// openIndexFile opens (creating if needed) an index. For a writable index the
// file is extended to maxBytes and entries = keep (the valid prefix); for a
// read-only one the entries are the file's contents.
func openIndexFile(fs FS, path string, entrySize, maxBytes int, writable bool, keep int) (*indexFile, error) {
	flag := os.O_RDONLY
	if writable {
		flag = os.O_RDWR | os.O_CREATE
	}
	f, err := fs.OpenFile(path, flag, 0o644)
	if err != nil {
		return nil, err
	}
	ix := &indexFile{path: path, fs: fs, file: f, entrySize: entrySize}
	size, err := f.Size()
	if err != nil {
		f.Close()
		return nil, err
	}
	if writable {
		ix.maxEntries = maxBytes / entrySize
		if keep < 0 {
			keep = int(size) / entrySize
		}
		if keep > ix.maxEntries {
			keep = ix.maxEntries
		}
		want := int64(ix.maxEntries * entrySize)
		// Zero anything after the kept entries, then extend sparsely.
		if size > int64(keep*entrySize) || size < want {
			if err := f.Truncate(int64(keep * entrySize)); err != nil {
				f.Close()
				return nil, err
			}
			if err := f.Truncate(want); err != nil {
				f.Close()
				return nil, err
			}
		}
		ix.n = keep
		size = want
	} else {
		ix.n = int(size) / entrySize
		ix.maxEntries = ix.n
	}
	if size > 0 {
		ix.mp, err = f.Map(int(size), false)
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

// writeNext writes entry n (unpublished) with a positioned write; the
// read-only mapping shows it. The caller publishes with n++ under Log.mu.
func (ix *indexFile) writeNext(fill func(e []byte)) error {
	var e [16]byte
	fill(e[:ix.entrySize])
	_, err := ix.file.WriteAt(e[:ix.entrySize], int64(ix.n*ix.entrySize))
	return err
}

// seal truncates the file to its entries and makes it durable.
func (ix *indexFile) seal(sync bool) error {
	if err := ix.file.Truncate(int64(ix.n * ix.entrySize)); err != nil {
		return err
	}
	ix.maxEntries = ix.n
	if sync {
		return ix.file.Sync()
	}
	return nil
}

func (ix *indexFile) close() error {
	var err error
	if ix.mp != nil {
		err = ix.mp.Unmap()
		ix.mp, ix.data = nil, nil
	}
	if cerr := ix.file.Close(); err == nil {
		err = cerr
	}
	return err
}

// Offset index entries: relative offset uint32, position uint32.
const offsetEntrySize = 8

type offsetIndex struct{ *indexFile }

func (ix offsetIndex) at(i int) (rel uint32, pos uint32) {
	e := ix.entry(i)
	return be.Uint32(e), be.Uint32(e[4:])
}

// lookup returns the position of the last indexed batch whose base offset is
// at most rel (0 if none). Log.mu must be held.
func (ix offsetIndex) lookup(rel int64) int64 {
	i := sort.Search(ix.n, func(i int) bool {
		r, _ := ix.at(i)
		return int64(r) > rel
	})
	if i == 0 {
		return 0
	}
	_, pos := ix.at(i - 1)
	return int64(pos)
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
