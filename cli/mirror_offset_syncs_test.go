package cli

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/quick"

	"paymentlog/client"
)

// The syncs a partition gets: its first record, the one after each run
// of offsetSyncEvery, the first after a delta change (once
// offsetSyncMinGap past the last), and the latest at a flush.
func TestPartSyncsDecides(t *testing.T) {
	tp := mirrorTP("t", 0)
	var p partSyncs
	var out []offsetSync
	for s := int64(10); s < 2500; s++ {
		dst := s + 5
		if s >= 2200 {
			dst += 3 // three foreign records on the target before source offset 2200
		}
		out = p.record(tp, s, dst, out)
	}
	out = p.flush(out)
	out = p.flush(out) // nothing new
	want := []offsetSync{{tp, 10, 15, "", ""}, {tp, 1010, 1015, "", ""}, {tp, 2010, 2015, "", ""}, {tp, 2200, 2208, "", ""}, {tp, 2500, 2508, "", ""}}
	if !slices.Equal(out, want) {
		t.Fatalf("syncs %v; want %v", out, want)
	}
	// A delta change within offsetSyncMinGap of the last sync makes none.
	p, out = partSyncs{}, nil
	out = p.record(tp, 0, 0, out)
	out = p.record(tp, 5, 1, out)
	if want := []offsetSync{{tp, 0, 0, "", ""}}; !slices.Equal(out, want) {
		t.Fatalf("syncs %v; want %v", out, want)
	}
}

func TestOffsetSyncRecordFormat(t *testing.T) {
	s := offsetSync{tp: mirrorTP("pay.ments-1", 7), source: 3*offsetSyncBucket + 5, target: 99, topicID: "00c0ffee00c0ffee0123456789abcdef"}
	if k, v := string(s.key()), string(s.value()); k != "pay.ments-1/7/3" || v != "pay.ments-1/7/196613/99/00c0ffee00c0ffee0123456789abcdef" {
		t.Fatalf("key %q value %q", k, v)
	}
	got, err := parseOffsetSync(s.value())
	if err != nil || got != s {
		t.Fatalf("parse %q: %v, %v", s.value(), got, err)
	}
	// An earlier build's sync, without the target topic ID, still parses.
	legacy := offsetSync{tp: mirrorTP("pay.ments-1", 7), source: 3*offsetSyncBucket + 5, target: 99}
	if got, err := parseOffsetSync([]byte("pay.ments-1/7/196613/99")); err != nil || got != legacy || string(legacy.value()) != "pay.ments-1/7/196613/99" {
		t.Fatalf("parse an earlier build's sync: %v, %v", got, err)
	}
	// A copy renamed by the prefix policy: the key and the value name it.
	renamed := offsetSync{tp: mirrorTP("pay", 7), source: 5, target: 99, topicID: "id1", dstTopic: "eu1.pay"}
	if k, v := string(renamed.key()), string(renamed.value()); k != "eu1.pay/7/0" || v != "pay/7/5/99/id1/eu1.pay" {
		t.Fatalf("renamed: key %q value %q", k, v)
	}
	if got, err := parseOffsetSync(renamed.value()); err != nil || got != renamed || got.targetTopic() != "eu1.pay" {
		t.Fatalf("parse %q: %v, %v", renamed.value(), got, err)
	}
	// The identity policy's target topic is not written, and one equal to
	// the source topic's is dropped.
	same := offsetSync{tp: mirrorTP("pay", 7), source: 5, target: 99, topicID: "id1", dstTopic: "pay"}
	if v := string(same.value()); v != "pay/7/5/99/id1" || string(same.key()) != "pay/7/0" {
		t.Fatalf("identity: value %q key %q", v, same.key())
	}
	if got, err := parseOffsetSync([]byte("pay/7/5/99/id1/pay")); err != nil || got.dstTopic != "" || got.targetTopic() != "pay" {
		t.Fatalf("parse a target topic equal to the source's: %+v, %v", got, err)
	}
	for _, bad := range []string{"", "t/0/1", "t/0/1/2/", "t/0/1/2/3/4/5", "t/0/1/2/3/", "t/0/1/2/3/a b", "t/0/1/2/3/..", "t/0/1/2//x", "t/0/1/2/a b", "t/0/1/2/a.b", "t/0/1/2/" + strings.Repeat("a", maxTopicIDLen+1),
		"/0/1/2", "t/-1/1/2", "t/0/-1/2", "t/0/1/x", "t/4294967296/1/2"} {
		if _, err := parseOffsetSync([]byte(bad)); err == nil {
			t.Errorf("parse %q: no error", bad)
		}
	}
}

// FuzzParseOffsetSync: no input panics, and what parses is written back
// (offsetSync.value) to what parses the same.
func FuzzParseOffsetSync(f *testing.F) {
	f.Add([]byte("payments/0/123/456"))
	f.Add([]byte("payments/0/123/456/0123456789abcdef0123456789abcdef"))
	f.Add([]byte("t/2147483647/9223372036854775807/0"))
	f.Add([]byte("t/+1/01/2"))
	f.Fuzz(func(t *testing.T, v []byte) {
		s, err := parseOffsetSync(v)
		if err != nil {
			return
		}
		again, err := parseOffsetSync(s.value())
		if err != nil || again != s {
			t.Fatalf("%q parsed as %v, written %q, parsed again %v, %v", v, s, s.value(), again, err)
		}
	})
}

// translate picks, of the syncs at or below the source offset, one with
// the greatest target offset and of those the greatest source offset.
func TestSyncMapTranslateMatchesNaive(t *testing.T) {
	tp := mirrorTP("t", 0)
	check := func(seed uint64, n uint8) bool {
		rnd := rand.New(rand.NewPCG(seed, 2))
		m := newSyncMap()
		var all []offsetSync
		for range int(n) {
			s := offsetSync{tp: tp, source: rnd.Int64N(50), target: rnd.Int64N(80)}
			m.add(s)
			all = append(all, s)
		}
		for src := int64(-1); src <= 51; src++ {
			var want *offsetSync
			for i, s := range all {
				if s.source <= src && (want == nil || s.target > want.target || s.target == want.target && s.source > want.source) {
					want = &all[i]
				}
			}
			got, ok := m.translate(tp, "", src)
			if ok != (want != nil) || ok && got != *want {
				t.Logf("translate %d: %v %v; want %v", src, got, ok, want)
				return false
			}
		}
		return true
	}
	if err := quick.Check(check, &quick.Config{MaxCount: 300}); err != nil {
		t.Fatal(err)
	}
}

// The syncs of a target topic's earlier incarnation (another topic ID)
// translate nothing of the current one, whatever their offsets.
func TestSyncMapKeepsIncarnationsApart(t *testing.T) {
	tp := mirrorTP("t", 0)
	m := newSyncMap()
	m.add(offsetSync{tp: tp, source: 1000, target: 3000, topicID: "old"}) // past a 2000 records of the target's own
	m.add(offsetSync{tp: tp, source: 0, target: 0, topicID: "new"})
	m.add(offsetSync{tp: tp, source: 1000, target: 1000, topicID: "new"})
	if got, ok := m.translate(tp, "new", 1500); !ok || got.target != 1000 {
		t.Fatalf("translate 1500 in the new incarnation: %v %v; want target 1000", got, ok)
	}
	if got, ok := m.translate(tp, "old", 500); ok {
		t.Fatalf("translate 500 in the old incarnation: %v; want none", got)
	}
	if got, ok := m.translate(tp, "other", 1500); ok {
		t.Fatalf("translate 1500 in an incarnation with no syncs: %v; want none", got)
	}
}

// thinSyncs keeps the recent syncs and the last of each older bucket.
func TestThinSyncs(t *testing.T) {
	tp := mirrorTP("t", 0)
	var ss []offsetSync
	for i := range int64(10) {
		ss = append(ss, offsetSync{tp: tp, source: i * offsetSyncBucket / 2, target: i})
	}
	got := thinSyncs(ss, 3)
	want := []offsetSync{ss[1], ss[3], ss[5], ss[6], ss[7], ss[8], ss[9]}
	if !slices.Equal(got, want) {
		t.Fatalf("thinned to %v; want %v", got, want)
	}
}

// The translation never skips a record: for a partition's history of
// mirror runs (each a process that resumes at the last commit, at or
// below the first record it had not had acknowledged, and crashes or
// hands over), with foreign records on the target and source offsets the
// mirror leaves out, a consumer of the target that starts at the
// translation of any source offset S reads every mirrored source record
// at or after S; and after the last run's flush, the source's end
// translates to the target's end.
func TestOffsetSyncsNeverSkip(t *testing.T) {
	tp := mirrorTP("t", 0)
	check := func(seed uint64) bool {
		const n = 3000
		h := newSyncHistory(rand.New(rand.NewPCG(seed, 3)), tp, n)
		log, skipped, m, endFlushed := h.log, h.skipped, h.syncs, h.endFlushed
		// reach[o]: the last target offset holding a mirrored source
		// offset at or after o (a consumer that starts past it misses one).
		reach := make([]int64, n+1)
		last := map[int64]int64{}
		for at, o := range log {
			last[o] = int64(at)
		}
		reach[n] = int64(len(log))
		for o := int64(n - 1); o >= 0; o-- {
			reach[o] = reach[o+1]
			if !skipped[o] {
				reach[o] = min(reach[o], last[o])
			}
		}
		for src := int64(0); src <= n; src++ {
			sy, ok := m.translate(tp, "", src)
			if !ok {
				for o := int64(0); o <= src; o++ {
					if !skipped[o] {
						t.Logf("source offset %d: no sync, though source offset %d was mirrored", src, o)
						return false
					}
				}
				continue // nothing mirrored yet at or below it: no sync
			}
			if sy.target > reach[src] {
				t.Logf("source offset %d translates to target %d, past target %d, the last copy of a source offset at or after it", src, sy.target, reach[src])
				return false
			}
		}
		mirroredEnd := h.mirroredEnd()
		if sy, _ := m.translate(tp, "", n); endFlushed && sy.target != mirroredEnd {
			t.Logf("the source's end translates to %d; the mirror's records end at %d (the target's at %d)", sy.target, mirroredEnd, len(log))
			return false
		}
		return true
	}
	if err := quick.Check(check, &quick.Config{MaxCount: 200}); err != nil {
		t.Fatal(err)
	}
}

// syncHistory is a random history of a partition mirrored by mirror
// runs (each a process that resumes at the last commit, at or below the
// first record it had not had acknowledged, and crashes or hands over),
// with records of the target's own and source offsets the mirror leaves
// out, up to source offset n.
type syncHistory struct {
	// log is the target partition: the source offset at each target
	// offset, -1 for a record of the target's own.
	log []int64
	// skipped are source offsets the mirror left out.
	skipped map[int64]bool
	syncs   *syncMap
	// endFlushed: the last run wrote records, and flushed.
	endFlushed bool
}

func newSyncHistory(rnd *rand.Rand, tp client.TopicPartition, n int64) syncHistory {
	h := syncHistory{skipped: map[int64]bool{}, syncs: newSyncMap()}
	for range rnd.IntN(300) {
		h.skipped[rnd.Int64N(n)] = true
	}
	for range rnd.IntN(20) {
		h.log = append(h.log, -1)
	}
	for commit := int64(0); commit < n; {
		var p partSyncs // a new process
		var out []offsetSync
		end := n
		last := rnd.IntN(3) == 0
		if !last {
			end = commit + rnd.Int64N(n-commit+1)
		}
		for s := commit; s < end; s++ {
			if rnd.IntN(200) == 0 {
				h.log = append(h.log, -1) // another producer's record
			}
			if h.skipped[s] {
				continue
			}
			out = p.record(tp, s, int64(len(h.log)), out)
			h.log = append(h.log, s)
			if rnd.IntN(500) == 0 {
				out = p.flush(out)
			}
		}
		if last || rnd.IntN(2) == 0 {
			out = p.flush(out)
		}
		h.endFlushed = last && p.started
		for _, s := range out {
			h.syncs.add(s)
		}
		if last {
			break
		}
		commit += rnd.Int64N(end - commit + 1) // at or below what was acknowledged
	}
	return h
}

// mirroredEnd is the end of what the mirror wrote: records another
// producer wrote after it are the target's own, and may come after.
func (h syncHistory) mirroredEnd() int64 {
	end := int64(len(h.log))
	for end > 0 && h.log[end-1] < 0 {
		end--
	}
	return end
}
