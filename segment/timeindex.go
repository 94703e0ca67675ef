package segment

import (
	"fmt"
	"sort"
)

// Time index entries: timestamp int64, relative offset uint32. An entry (T, r)
// says every batch of the segment before relative offset r has a max
// timestamp <= T; entries are written alongside offset-index entries.
const timeEntrySize = 12

type timeIndex struct{ *indexFile }

func (ix timeIndex) at(i int) (ts int64, rel uint32) {
	e := ix.entry(i)
	return int64(be.Uint64(e)), be.Uint32(e[8:])
}

// rel returns entry i's relative offset.
func (ix timeIndex) rel(i int) uint32 {
	_, r := ix.at(i)
	return r
}

// lookup returns the relative offset from which a scan for the first record
// with timestamp >= ts may start (0 if from the segment start). Log.mu held.
func (ix timeIndex) lookup(ts int64) int64 {
	// entries whose T < ts: every batch before their offset is too old.
	i := sort.Search(ix.n, func(i int) bool {
		t, _ := ix.at(i)
		return t >= ts
	})
	if i == 0 {
		return 0
	}
	_, rel := ix.at(i - 1)
	return int64(rel)
}

func (ix timeIndex) add(ts int64, rel uint32) error {
	return ix.writeNext(func(e []byte) {
		be.PutUint64(e, uint64(ts))
		be.PutUint32(e[8:], rel)
	})
}

// lastTimestamp is the timestamp of the last entry, or -1.
func (ix timeIndex) lastTimestamp() int64 {
	if ix.n == 0 {
		return -1
	}
	t, _ := ix.at(ix.n - 1)
	return t
}

func (ix timeIndex) check() error {
	var prevT int64 = -1 << 63
	var prevRel int64 = -1
	for i := 0; i < ix.n; i++ {
		t, r := ix.at(i)
		if t < prevT || int64(r) <= prevRel {
			return fmt.Errorf("time index %s: bad entry %d", ix.path, i)
		}
		prevT, prevRel = t, int64(r)
	}
	return nil
}
