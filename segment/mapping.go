package segment

import (
	"path/filepath"
	"sync"
	"sync/atomic"
)

// mapping is a reference-counted memory mapping. The segment that owns it
// holds one reference; every View and every in-flight flush holds one more.
// When the count drops to zero the memory is unmapped and the file closed, so
// bytes a reader holds are never unmapped or recycled under it.
type mapping struct {
	m    Mapping
	data []byte
	file File // closed with the mapping when closeFile is set
	// closeFile makes the final release close file too (the mapping then owns it).
	closeFile bool
	refs      atomic.Int64
	onFree    func(error) // called after unmapping (for logging); may be nil
}

func newMapping(m Mapping, file File, closeFile bool) *mapping {
	mp := &mapping{m: m, data: m.Bytes(), file: file, closeFile: closeFile}
	mp.refs.Store(1)
	return mp
}

// acquire adds a reference. The caller must already know the mapping is live
// (it holds a reference, or holds Log.mu while the owning segment holds one).
func (mp *mapping) acquire() {
	if mp.refs.Add(1) <= 1 {
		panic("segment: acquire of a released mapping")
	}
}

// release drops a reference, unmapping on the last one.
func (mp *mapping) release() {
	n := mp.refs.Add(-1)
	switch {
	case n > 0:
		return
	case n < 0:
		panic("segment: mapping released too often")
	}
	err := mp.m.Unmap()
	if mp.closeFile && mp.file != nil {
		if cerr := mp.file.Close(); err == nil {
			err = cerr
		}
	}
	if mp.onFree != nil {
		mp.onFree(err)
	}
}

// segmentMaps counts the live mappings of each segment file in this process,
// across Log instances: a View taken before Close (or of a mapping a
// truncation replaced) keeps a mapping of the file that the log now open on
// the directory does not hold. Truncating such a file in place would change
// the bytes under that View, and a read past the cut would be a SIGBUS, so
// TruncateTo copies instead. Keyed by path;
// a file renamed over the path only makes the check conservative.
var segmentMaps struct {
	sync.Mutex
	n map[string]int
}

// trackMapping counts mp as a live mapping of path until it is freed.
func trackMapping(path string, mp *mapping) {
	path = filepath.Clean(path)
	segmentMaps.Lock()
	if segmentMaps.n == nil {
		segmentMaps.n = map[string]int{}
	}
	segmentMaps.n[path]++
	segmentMaps.Unlock()
	onFree := mp.onFree
	mp.onFree = func(err error) {
		segmentMaps.Lock()
		if segmentMaps.n[path]--; segmentMaps.n[path] <= 0 {
			delete(segmentMaps.n, path)
		}
		segmentMaps.Unlock()
		if onFree != nil {
			onFree(err)
		}
	}
}

// liveMappings returns the number of live mappings of path in this process.
func liveMappings(path string) int {
	segmentMaps.Lock()
	defer segmentMaps.Unlock()
	return segmentMaps.n[filepath.Clean(path)]
}

// View is a read-only window of whole batches aliasing the segment mapping. The
// bytes stay valid until Release, even if the segment is deleted meanwhile.
type View struct {
	Data []byte // whole batches, possibly empty at the log end
	Next int64  // the offset after the last batch in Data
	mp   *mapping
}

// Release drops the view's reference; Data must not be used afterwards.
// Calling Release again is a no-op; Release is not safe for concurrent use on
// the same View.
func (v *View) Release() {
	if v == nil || v.mp == nil {
		return
	}
	mp := v.mp
	v.mp, v.Data = nil, nil
	mp.release()
}
