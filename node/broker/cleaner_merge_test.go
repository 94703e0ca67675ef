package broker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"paymentlog/segment"
	"paymentlog/wire"
)

// keyedSeqBatch is one record of key k from idempotent producer pid at
// sequence seq.
func keyedSeqBatch(pid int64, seq int32, k, v string) []byte {
	bd := segment.NewBuilder(segment.BuilderOptions{ProducerID: pid, BaseSequence: seq})
	bd.Add(time.Now().UnixMilli(), []byte(k), []byte(v), nil)
	return slices.Clone([]byte(bd.Build()))
}

// A follower whose log ends inside a run of batches the leader's cleaner
// emptied and merged into one catches up: the leader sends it the rest of
// the run as one batch (segment.TrimEmptyBatch), with the sequence numbers
// that go with its offsets, so the follower's idempotent producer state
// ends where the leader's does and the producer's next batch is taken.
func TestFollowerCatchesUpInsideAMergedRun(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 2, segBytes: retentionSegBytes, maxWait: 50 * time.Millisecond,
		lagTime: time.Minute, cleanerInterval: -1})
	c.createPartition("payments", 0, []int32{1, 2}, 1, 1)
	c.setCleanup(testKey, CleanupCompact, CompactionConfig{MinDirtyRatio: 0, DeleteRetention: time.Hour})
	const pid = 42
	seq := int32(0)
	produce := func(acks int8) wire.ProducePartitionResponse {
		t.Helper()
		r := mustProduce(t, c, acks, keyedSeqBatch(pid, seq, "acct-1", fmt.Sprint(seq, bigValue)))
		if r.Err != wire.None {
			t.Fatalf("seq %d: %v %s", seq, r.Err, r.Message)
		}
		seq++
		return r
	}
	// Until the leader's active segment holds at least two batches: the
	// follower's log will end inside it.
	for {
		produce(wire.AcksAll)
		if leo := logOf(c, 1).LogEndOffset(); leo-slices.Max(logOf(c, 1).Segments()) >= 2 {
			break
		}
	}
	waitInSync(t, c, testKey)
	stoppedAt := logOf(c, 2).LogEndOffset()
	dir2 := c.node(2).dir
	c.stopNode(2)
	c.setISR(testKey, 1)
	for range 20 {
		produce(wire.AcksAll)
	}
	s := c.node(1).b.CompactNow(context.Background())
	if s.Err != nil || s.Ran != 1 {
		t.Fatalf("leader's pass: %+v", s)
	}
	var straddles bool
	v, err := logOf(c, 1).Read(stoppedAt, 1<<20, -1)
	if err != nil {
		t.Fatal(err)
	}
	h, err := segment.ParseHeader(v.Data)
	v.Release()
	if err != nil {
		t.Fatal(err)
	}
	straddles = h.BaseOffset < stoppedAt && h.RecordCount == 0
	if !straddles {
		t.Fatalf("the leader's batch at the follower's log end %d is %+v: not a merged run around it", stoppedAt, h)
	}

	c.startNode(2, dir2)
	c.push(testKey)
	leo := logOf(c, 1).LogEndOffset()
	waitLEO(t, c, 2, leo, "the follower caught up through the merged run")
	lead, fol := readAll(t, logOf(c, 1), leo), readAll(t, logOf(c, 2), leo)
	for off, v := range lead {
		if fol[off] != v {
			t.Fatalf("offset %d: the follower has %.20q, the leader %.20q", off, fol[off], v)
		}
	}
	for off := range fol {
		if _, ok := lead[off]; !ok && off >= stoppedAt {
			t.Fatalf("the follower has offset %d, which the leader's cleaner removed", off)
		}
	}
	last := func(id int32) string {
		p := c.node(id).b.partition(testKey.topic, testKey.partition)
		p.appendMu.Lock()
		defer p.appendMu.Unlock()
		e := p.producers.producers[pid]
		if e == nil || len(e.batches) == 0 {
			return "none"
		}
		return fmt.Sprintf("epoch %d last %+v", e.epoch, e.batches[len(e.batches)-1])
	}
	if a, b := last(1), last(2); a != b {
		t.Fatalf("producer %d: leader %s, follower %s", pid, a, b)
	}
	c.setISR(testKey, 1, 2)
	if r := produce(wire.AcksAll); r.BaseOffset != leo {
		t.Fatalf("the producer's next batch at %d, want %d", r.BaseOffset, leo)
	}
	waitLEO(t, c, 2, leo+1, "the follower copied the next batch")
}

// Every replica's cleaner folds the small segments its earlier passes
// left into fewer, counts them, and serves every key's latest record as
// before.
func TestCompactNowMergesSmallSegments(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 2, segBytes: retentionSegBytes, maxWait: 50 * time.Millisecond, cleanerInterval: -1})
	c.createPartition("payments", 0, []int32{1, 2}, 1, 1)
	c.setCleanup(testKey, CleanupCompact, CompactionConfig{MinDirtyRatio: 0, DeleteRetention: time.Hour})
	latest := map[string]int64{}
	var off int64
	produce := func(n int) {
		t.Helper()
		for range n {
			k := fmt.Sprint("k", off%5)
			if r := mustProduce(t, c, wire.AcksAll, keyedBatch(segment.CodecNone, rec(k, fmt.Sprint(off, bigValue)))); r.Err != wire.None {
				t.Fatal(r.Err)
			}
			latest[k] = off
			off++
		}
		waitLEO(t, c, 2, off, "the follower caught up")
		waitInSync(t, c, testKey)
	}
	produce(60)
	merged := map[int32]int{}
	for _, id := range []int32{1, 2} {
		s := c.node(id).b.CompactNow(context.Background())
		if s.Err != nil || s.Ran != 1 {
			t.Fatalf("node %d, first pass: %+v", id, s)
		}
		merged[id] = s.SegmentsMerged
	}
	produce(60)
	before, second := len(logOf(c, 1).Segments()), 0
	for _, id := range []int32{1, 2} {
		s := c.node(id).b.CompactNow(context.Background())
		if s.Err != nil || s.Ran != 1 || s.SegmentsMerged == 0 {
			t.Fatalf("node %d, second pass merged nothing: %+v", id, s)
		}
		merged[id] += s.SegmentsMerged
		if id == 1 {
			second = s.SegmentsMerged
		}
		if st := c.node(id).b.Stats(); st.CleanerSegmentsMerged != uint64(merged[id]) {
			t.Fatalf("node %d: %d segments merged, stats say %d", id, merged[id], st.CleanerSegmentsMerged)
		}
		got := readAll(t, logOf(c, id), off)
		for k, o := range latest {
			if got[o] != fmt.Sprint(o, bigValue) {
				t.Fatalf("node %d lost %s's latest record at %d", id, k, o)
			}
		}
		if len(got) >= int(off)/2 {
			t.Fatalf("node %d holds %d of %d records", id, len(got), off)
		}
	}
	if after := len(logOf(c, 1).Segments()); after > before-second {
		t.Fatalf("%d segments before the second pass, %d after merging %d", before, after, second)
	}
}

// After a restart, which rebuilds the idempotent producer state from the
// batch headers, a retry of one batch of a run the cleaner emptied and
// merged is answered as the duplicate it is, at its offset (it was
// OutOfOrderSequence), and the producer's next batch is taken.
func TestRetryInsideAMergedRunAfterARestart(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 1, segBytes: retentionSegBytes, maxWait: 50 * time.Millisecond, cleanerInterval: -1})
	c.createPartition("payments", 0, []int32{1}, 1, 1)
	c.setCleanup(testKey, CleanupCompact, CompactionConfig{MinDirtyRatio: 0, DeleteRetention: time.Hour})
	const pid = 42
	var batches [][]byte
	produce := func() wire.ProducePartitionResponse {
		t.Helper()
		b := keyedSeqBatch(pid, int32(len(batches)), "acct-1", fmt.Sprint(len(batches), bigValue))
		batches = append(batches, b)
		r := mustProduce(t, c, wire.AcksAll, b)
		if r.Err != wire.None || r.BaseOffset != int64(len(batches)-1) {
			t.Fatalf("batch %d: %+v", len(batches)-1, r)
		}
		return r
	}
	// Two sealed segments, and one batch in the active one: after the
	// pass the producer's last batches are two merged runs and that one.
	for {
		produce()
		segs := logOf(c, 1).Segments()
		if len(segs) == 3 && logOf(c, 1).LogEndOffset()-segs[2] == 1 {
			break
		}
	}
	if s := c.node(1).b.CompactNow(context.Background()); s.Err != nil || s.Ran != 1 {
		t.Fatalf("pass: %+v", s)
	}
	v, err := logOf(c, 1).Read(2, 1<<20, -1)
	if err != nil {
		t.Fatal(err)
	}
	h, err := segment.ParseHeader(v.Data)
	v.Release()
	if err != nil || h.BaseOffset != 0 || h.RecordCount != 0 || h.LastOffset() < 3 {
		t.Fatalf("the batch holding offset 2 after the pass: %+v, %v; want a merged run from 0", h, err)
	}
	if segs := logOf(c, 1).Segments(); int(segs[2])-1 <= len(batches)-3 {
		t.Fatalf("segments %v: the batch to retry is not in a sealed one", segs)
	}
	// Without a producer snapshot (none yet, or one older than the
	// run) the restarted node rebuilds the state from the batch headers.
	dir := c.node(1).dir
	c.stopNode(1)
	if err := os.Remove(filepath.Join(dir, "payments-0", ProducerSnapshotFile)); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	n := c.startNode(1, dir)
	c.electNode(testKey, 1)
	retry := len(batches) - 3 // among the producer's last five batches, inside the second run
	if r := mustProduce(t, c, wire.AcksAll, batches[retry]); r.Err != wire.None || r.BaseOffset != int64(retry) {
		t.Fatalf("retry of batch %d after the restart: %+v; want a duplicate at %d (producer state %s)", retry, r, retry, producerStateOf(n))
	}
	produce()
}
