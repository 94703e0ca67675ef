package replica_test

import (
	"fmt"
	"strings"
)

// memLog is an in-memory partition log for scenario tests: one entry per
// offset, each stamped with the leader epoch it was written in.
type memLog struct {
	start   int64
	entries []entry
}

type entry struct {
	epoch int32
	val   string
}

func (l *memLog) leo() int64 { return l.start + int64(len(l.entries)) }

func (l *memLog) latestEpoch() int32 {
	if len(l.entries) == 0 {
		return -1
	}
	return l.entries[len(l.entries)-1].epoch
}

// EndOffsetForEpoch implements replica.EpochSource the way segment.Log does.
func (l *memLog) EndOffsetForEpoch(epoch int32) (int32, int64) {
	found := int32(-1)
	for i, e := range l.entries {
		if e.epoch > epoch {
			if found < 0 {
				return -1, -1
			}
			return found, l.start + int64(i)
		}
		found = e.epoch
	}
	if found < 0 {
		return -1, -1
	}
	return found, l.leo()
}

func (l *memLog) truncateTo(off int64) {
	if off < l.leo() {
		l.entries = l.entries[:max(off-l.start, 0)]
	}
}

func (l *memLog) at(off int64) (entry, bool) {
	if off < l.start || off >= l.leo() {
		return entry{}, false
	}
	return l.entries[off-l.start], true
}

func (l *memLog) String() string {
	var b strings.Builder
	b.WriteString("[")
	for i, e := range l.entries {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s@%d", e.val, e.epoch)
	}
	b.WriteString("]")
	return b.String()
}
