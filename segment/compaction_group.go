package segment

import "math"

// A compaction pass rewrites the sealed segments it cleans in groups
// (Kafka's groupSegmentsBySize): neighbouring segments that together fit
// in one segment become one. Without it every sealed segment keeps its
// three open files and its mapping however small cleaning leaves it, and
// a compacted topic whose active segment is rolled every hour
// (max.compaction.lag.ms) grows by a segment an hour forever: a node with
// a hundred such partitions would pass the kernel's default of 65 530
// mappings per process (vm.max_map_count) within a month.
//
// A group is at most SegmentBytes of its segments' current sizes (what it
// becomes after cleaning is no larger), spans at most MaxUint32 offsets
// (the index's relative offsets) and fits the index's entries. Its
// segments are neighbours in the log: a sealed segment the pass does not
// read (an empty one) ends a group. A group of several is rewritten even
// if it loses no record; a group of one only if it does. With the default
// min.cleanable.dirty.ratio of 0.5 a pass runs only once the dirty bytes
// are at least the clean ones, so rewriting clean segments to merge them
// at most doubles what a pass reads and writes (the cleaner's throttle
// paces it all).

// groupLimits bound one group.
type groupLimits struct {
	maxBytes   int64 // the log's SegmentBytes
	maxEntries int64 // offset index entries an index holds
	interval   int64 // bytes between index entries
}

func (l *Log) groupLimits() groupLimits {
	return groupLimits{
		maxBytes:   l.opts.SegmentBytes,
		maxEntries: int64(l.opts.MaxIndexBytes / offsetEntrySize),
		interval:   int64(max(l.opts.IndexInterval, 1)),
	}
}

// groupCleanables splits segs (oldest first, as cleanableSegments lists
// them) into the groups a pass rewrites, each becoming one segment.
func groupCleanables(segs []cleanable, lim groupLimits) [][]cleanable {
	var out [][]cleanable
	for i := 0; i < len(segs); {
		size := int64(len(segs[i].data))
		j := i + 1
		for ; j < len(segs); j++ {
			c := segs[j]
			grown := size + int64(len(c.data))
			if c.at != segs[j-1].at+1 || c.s.base != segs[j-1].next ||
				grown > lim.maxBytes || grown/lim.interval >= lim.maxEntries ||
				c.next-1-segs[i].s.base > math.MaxUint32 {
				break
			}
			size = grown
		}
		out = append(out, segs[i:j])
		i = j
	}
	return out
}
