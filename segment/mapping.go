package segment

import (
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
