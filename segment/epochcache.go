package segment

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// EpochEntry is one leader-epoch cache entry.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// epochCache maps each leader epoch to the first offset written in it
// (KIP-101). It is a pure value; the Log persists it and guards it with Log.mu.
// Invariant: epochs and start offsets strictly increase.
type epochCache struct {
	entries []EpochEntry
}

// assign records that epoch starts at offset if epoch is newer than the
// latest (replacing entries that start at or after offset); it reports
// whether the cache changed.
func (c *epochCache) assign(epoch int32, offset int64) bool {
	if epoch < 0 {
		return false
	}
	if n := len(c.entries); n > 0 {
		last := c.entries[n-1]
		if epoch <= last.Epoch {
			return false
		}
		if offset <= last.StartOffset {
			// A newer epoch must start after the older one; drop what it overrides.
			c.truncateFromEnd(offset)
		}
	}
	c.entries = append(c.entries, EpochEntry{Epoch: epoch, StartOffset: offset})
	return true
}

// opens reports whether assign would add epoch (it is newer than the latest).
func (c *epochCache) opens(epoch int32) bool {
	return epoch >= 0 && (len(c.entries) == 0 || epoch > c.entries[len(c.entries)-1].Epoch)
}

func (c *epochCache) latest() int32 {
	if len(c.entries) == 0 {
		return -1
	}
	return c.entries[len(c.entries)-1].Epoch
}

// truncateFromEnd removes entries starting at or after endOffset.
func (c *epochCache) truncateFromEnd(endOffset int64) bool {
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].StartOffset >= endOffset })
	if i == len(c.entries) {
		return false
	}
	c.entries = c.entries[:i]
	return true
}

// truncateFromStart drops entries wholly below startOffset; the entry covering
// startOffset is moved up to start there.
func (c *epochCache) truncateFromStart(startOffset int64) bool {
	// i = first entry starting after startOffset
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].StartOffset > startOffset })
	if i == 0 {
		return false
	}
	changed := i > 1 || c.entries[0].StartOffset != startOffset
	covering := c.entries[i-1]
	covering.StartOffset = startOffset
	c.entries = append([]EpochEntry{covering}, c.entries[i:]...)
	return changed
}

// endOffsetFor returns the largest known epoch <= epoch and the start offset
// of the next higher epoch, or leo if it is the latest; (-1, -1) if the cache
// knows no epoch <= epoch.
func (c *epochCache) endOffsetFor(epoch int32, leo int64) (int32, int64) {
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].Epoch > epoch })
	if i == 0 {
		return -1, -1
	}
	if i == len(c.entries) {
		return c.entries[i-1].Epoch, leo
	}
	return c.entries[i-1].Epoch, c.entries[i].StartOffset
}

func (c *epochCache) clone() []EpochEntry {
	return append([]EpochEntry(nil), c.entries...)
}

// encode renders the leader-epoch-checkpoint file (see the package doc).
func (c *epochCache) encode() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(c.entries))
	for _, e := range c.entries {
		fmt.Fprintf(&b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return []byte(b.String())
}

func decodeEpochCache(path string, data []byte) (epochCache, error) {
	lines, err := checkpointLines(path, data)
	if err != nil {
		return epochCache{}, err
	}
	if len(lines) == 0 {
		return epochCache{}, corruptf("checkpoint %s: missing count", path)
	}
	n, err := strconv.Atoi(string(lines[0]))
	if err != nil || n != len(lines)-1 {
		return epochCache{}, corruptf("checkpoint %s: bad entry count %q", path, lines[0])
	}
	var c epochCache
	for _, l := range lines[1:] {
		f := strings.Fields(string(l))
		if len(f) != 2 {
			return epochCache{}, corruptf("checkpoint %s: bad line %q", path, l)
		}
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || e < 0 || o < 0 {
			return epochCache{}, corruptf("checkpoint %s: bad line %q", path, l)
		}
		if k := len(c.entries); k > 0 && (int32(e) <= c.entries[k-1].Epoch || o < c.entries[k-1].StartOffset) {
			return epochCache{}, corruptf("checkpoint %s: entries out of order at %q", path, l)
		}
		c.entries = append(c.entries, EpochEntry{Epoch: int32(e), StartOffset: o})
	}
	return c, nil
}
