package cli

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"paymentlog/client"
	"paymentlog/wire"
)

// Offset syncs (MirrorMaker 2's offset-syncs): as it copies, the mirror
// writes a sparse map from source offsets to target offsets, per
// partition, to a compacted topic on the target (--offset-syncs-topic,
// default paymentlog-mirror.offset-syncs), from which consumer groups'
// committed source offsets are translated (--sync-group-offsets, mirror
// translate-offsets). It lives on the target: at a fail-over the source
// may be gone, the target is where the translated offsets are used, and
// the mirror already has a producer there; any later mirror process, and
// translate-offsets, read it back.
//
// A sync (S, T) of a partition means: a consumer of the target that starts
// at offset T reads every record the mirror copies from source offset S on
// (and maybe some before S again). The mirror writes one only from the
// target's acknowledgements of its own records, in order: (s, t) for the
// first record it acknowledged of a partition, for the first record after
// a change of the source-to-target offset delta (at most every
// offsetSyncMinGap source offsets), and (s+1, t+1) after the last record
// of a run of offsetSyncEvery, and at each --commit-interval. Every one
// holds across crashes and hand-overs: the process that resumes a
// partition starts at or below the first record not acknowledged, and
// writes after every record acknowledged before it. So every sync at or
// below a committed source offset S is one a consumer of the target may
// start at without missing a record of S or after, and S translates to the
// greatest target offset among them: that of the latest sync at or below S
// (after a crash, the rerun's: it repeats fewer). A consumer of the target
// may see a few records again, never misses one.
//
// A sync holds for one incarnation of the target topic: the one whose
// topic ID it names. A target topic deleted and created again has another
// ID, and offsets that start again from 0; syncs of an earlier incarnation
// are ignored (syncMap is keyed by the ID, and the translation asks with
// the topic's current one). The ID a run writes is the one it learned
// when it first fitted the target topic (topicSyncer.ids), before copying
// anything into it, and kept for the run: a sync naming ID X is then only
// ever decided from records acknowledged by incarnation X, or by a later
// one (if the topic was recreated under the running mirror), in which
// case X is gone and the sync is never used.
//
// Record format (one per sync; part of the format):
//
//	key:   "<target topic>/<partition>/<bucket>"   bucket = source offset / offsetSyncBucket
//	value: "<topic>/<partition>/<source offset>/<target offset>/<target topic id>[/<target topic>]"
//
// <topic> is the source topic. Its copy on the target is named by the
// replication policy (mirror_policy.go): the same name with identity, and
// the value then ends at the ID (as before the policies existed); another
// name with prefix ("eu1.payments"), which the value then ends with, and
// which the key starts with, so that the syncs of two sources' topics of
// one name mirrored to one target ("eu1.payments", "ap1.payments") never
// share a key. A sync is looked up by its source partition and the target
// topic's ID, which names one topic: the name is for the reader of the
// topic, and for the keys. Offsets are decimal; the target topic ID is the
// target's metadata's topic ID (1 to maxTopicIDLen letters, digits, '-'
// and '_'); the target topic, a topic name. Syncs
// written before the ID was added (the first build with offset syncs)
// have no "/<target topic id>": they still parse (topicID ""), and are
// ignored, since nothing tells which incarnation they were of
// (syncReader counts them; translate-offsets falls back to the header
// scan for the partitions they covered, mirror_header_scan.go).
//
// Compaction keeps the last sync written of each bucket (a sync every
// offsetSyncBucket source offsets, forever), and every sync younger than
// min.compaction.lag.ms (offsetSyncCompactionLag). The key does not name
// the incarnation: a recreated topic's syncs replace the old one's, which
// are of no use any more.

// defaultOffsetSyncsTopic is --offset-syncs-topic's default.
const defaultOffsetSyncsTopic = "paymentlog-mirror.offset-syncs"

const (
	// offsetSyncEvery: a partition gets a sync at least every this many
	// records acknowledged (MirrorMaker 2's offset.lag.max is 100).
	offsetSyncEvery = 1000
	// offsetSyncMinGap: a change of the offset delta makes a sync only
	// this many source offsets past the last one (a compacted source
	// topic changes it at every gap).
	offsetSyncMinGap = 100
	// offsetSyncBucket source offsets share a compaction key. Part of the
	// format.
	offsetSyncBucket = 1 << 16
	// maxSyncsPerPartition bounds what a syncMap keeps of a partition;
	// past it the older half is thinned to one per bucket.
	maxSyncsPerPartition = 4096
	// maxTopicIDLen bounds a sync's target topic ID. Part of the format.
	maxTopicIDLen = 64
)

// offsetSyncCompactionLag is the sync topic's min.compaction.lag.ms: a
// day of syncs is kept whole, for groups that lag the mirror by less.
const offsetSyncCompactionLag = "86400000"

// offsetSync says a consumer of the target at offset target reads every
// record the mirror copies from source offset source of tp on, in the
// incarnation of the target topic whose ID is topicID ("": a sync of an
// earlier build, which names none).
type offsetSync struct {
	tp             client.TopicPartition
	source, target int64
	topicID        string
	// dstTopic is the target topic's name when the replication policy
	// gives it another than tp.Topic; "": tp.Topic.
	dstTopic string
}

// targetTopic is the name of the target topic the sync is of.
func (s offsetSync) targetTopic() string {
	if s.dstTopic != "" {
		return s.dstTopic
	}
	return s.tp.Topic
}

// key is the sync's compaction key.
func (s offsetSync) key() []byte {
	return fmt.Appendf(nil, "%s/%d/%d", s.targetTopic(), s.tp.Partition, s.source/offsetSyncBucket)
}

// value is the sync's record value (without a topic ID, an earlier
// build's; a target topic only after an ID).
func (s offsetSync) value() []byte {
	v := fmt.Appendf(nil, "%s/%d/%d/%d", s.tp.Topic, s.tp.Partition, s.source, s.target)
	if s.topicID != "" {
		v = append(append(v, '/'), s.topicID...)
		if s.dstTopic != "" && s.dstTopic != s.tp.Topic {
			v = append(append(v, '/'), s.dstTopic...)
		}
	}
	return v
}

var errBadOffsetSync = errors.New("mirror: malformed offset sync")

// parseOffsetSync decodes a sync record's value (offsetSync.value), with
// or without the target topic ID, with or without the target topic's
// name (checked by a group name's rules, a topic name's; one equal to the
// source topic's is dropped: the value written would not have it).
func parseOffsetSync(v []byte) (offsetSync, error) {
	fields := strings.Split(string(v), "/")
	if len(fields) < 4 || len(fields) > 6 || fields[0] == "" || len(fields) >= 5 && !validTopicID(fields[4]) ||
		len(fields) == 6 && wire.CheckGroupName(fields[5]) != "" {
		return offsetSync{}, fmt.Errorf("%w: %q", errBadOffsetSync, truncateForError(v))
	}
	p, err1 := strconv.ParseInt(fields[1], 10, 32)
	s, err2 := strconv.ParseInt(fields[2], 10, 64)
	t, err3 := strconv.ParseInt(fields[3], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil || p < 0 || s < 0 || t < 0 {
		return offsetSync{}, fmt.Errorf("%w: %q", errBadOffsetSync, truncateForError(v))
	}
	sync := offsetSync{tp: client.TopicPartition{Topic: fields[0], Partition: int32(p)}, source: s, target: t}
	if len(fields) >= 5 {
		sync.topicID = fields[4]
	}
	if len(fields) == 6 && fields[5] != fields[0] {
		sync.dstTopic = fields[5]
	}
	return sync, nil
}

// validTopicID: 1 to maxTopicIDLen letters, digits, '-' and '_' (the
// controller makes 32 hex digits).
func validTopicID(id string) bool {
	if id == "" || len(id) > maxTopicIDLen {
		return false
	}
	for _, c := range []byte(id) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// truncateForError is v, cut to 64 bytes for an error message.
func truncateForError(v []byte) string {
	if len(v) > 64 {
		return string(v[:64]) + "..."
	}
	return string(v)
}

// partSyncs decides when one partition gets a sync, from the records the
// target acknowledged, in order (the inflight bookkeeping's contiguous
// prefix). It does no I/O: what it decides is appended to out.
type partSyncs struct {
	started bool
	// next is the sync after the last record acknowledged: (s+1, t+1).
	next offsetSync
	// written is the last sync decided; valid once started.
	written offsetSync
}

// record reports that the record at source offset s is at target offset
// t, after every earlier one of the partition; it appends the sync it
// makes, if any, to out.
func (p *partSyncs) record(tp client.TopicPartition, s, t int64, out []offsetSync) []offsetSync {
	at := offsetSync{tp: tp, source: s, target: t}
	switch {
	case !p.started:
		p.started = true
		out = p.write(at, out)
	case (s != p.next.source || t != p.next.target) && s-p.written.source >= offsetSyncMinGap:
		out = p.write(at, out) // the delta changed
	}
	p.next = offsetSync{tp: tp, source: s + 1, target: t + 1}
	if p.next.source-p.written.source >= offsetSyncEvery {
		out = p.write(p.next, out)
	}
	return out
}

// flush appends the sync after the last record acknowledged, unless it
// was written already.
func (p *partSyncs) flush(out []offsetSync) []offsetSync {
	if !p.started || p.next == p.written {
		return out
	}
	return p.write(p.next, out)
}

func (p *partSyncs) write(s offsetSync, out []offsetSync) []offsetSync {
	p.written = s
	return append(out, s)
}

// syncMap is the syncs known of each partition and incarnation of its
// target topic, read back from the sync topic; it translates source
// offsets to target offsets.
type syncMap struct {
	// parts are each partition's syncs of each incarnation sorted by
	// source, then target offset, without repeats.
	parts map[syncKey][]offsetSync
}

// syncKey is a partition of one incarnation of the target topic.
type syncKey struct {
	tp      client.TopicPartition
	topicID string
}

func newSyncMap() *syncMap { return &syncMap{parts: map[syncKey][]offsetSync{}} }

func compareSyncs(a, b offsetSync) int {
	return cmp.Or(cmp.Compare(a.source, b.source), cmp.Compare(a.target, b.target))
}

// add records s.
func (m *syncMap) add(s offsetSync) {
	k := syncKey{s.tp, s.topicID}
	ss := m.parts[k]
	i, found := slices.BinarySearchFunc(ss, s, compareSyncs)
	if found {
		return
	}
	ss = slices.Insert(ss, i, s)
	if len(ss) > maxSyncsPerPartition {
		ss = thinSyncs(ss, len(ss)/2)
	}
	m.parts[k] = ss
}

// thinSyncs keeps the last keep syncs of ss and, before them, the last of
// each bucket. Any subset of valid syncs still translates conservatively;
// this one keeps the translation of old offsets within a bucket or two.
func thinSyncs(ss []offsetSync, keep int) []offsetSync {
	old, recent := ss[:len(ss)-keep], ss[len(ss)-keep:]
	var out []offsetSync
	for i, s := range old {
		if i+1 == len(old) || old[i+1].source/offsetSyncBucket != s.source/offsetSyncBucket {
			out = append(out, s)
		}
	}
	return append(out, recent...)
}

// translate returns, of the syncs of tp in the target topic's incarnation
// topicID at or below source, the one with the greatest target offset (of
// several, the greatest source offset); false when there is none.
func (m *syncMap) translate(tp client.TopicPartition, topicID string, source int64) (offsetSync, bool) {
	ss := m.parts[syncKey{tp, topicID}]
	n := sort.Search(len(ss), func(i int) bool { return ss[i].source > source }) // first past source
	if n == 0 {
		return offsetSync{}, false
	}
	best := ss[n-1]
	for i := n - 2; i >= 0; i-- {
		if ss[i].target > best.target {
			best = ss[i]
		}
	}
	return best, true
}

// untranslate returns, of the syncs of tp in the target topic's
// incarnation topicID at or below target offset target, the one with the
// greatest source offset; false when there is none. It maps a group's
// offset on the copy back onto the source (mirror failback-offsets): a
// sync (S, T') says every source record below S that the mirror copied
// has a copy at a target offset below T' (the mirror writes it after
// them, in order), so a group that consumed the copy up to target offset T >= T'
// consumed every one of them, and S is a source offset it may resume at
// without missing a record (it may read some again). After a crash the
// syncs' source offsets are not sorted by target offset: any of them at
// or below target holds, and the greatest misses least.
func (m *syncMap) untranslate(tp client.TopicPartition, topicID string, target int64) (offsetSync, bool) {
	var best offsetSync
	found := false
	for _, s := range m.parts[syncKey{tp, topicID}] {
		if s.target <= target && (!found || s.source > best.source) {
			best, found = s, true
		}
	}
	return best, found
}
